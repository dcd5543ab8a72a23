/** Bodies, paths and queries of the team endpoints (routes.ts), strict. */
import { z } from 'zod';

/** Characters of one broadcast message (LINE and Telegram take it in parts past their own limits). */
export const broadcastMaxChars = 4000;

/** `POST /teams`. */
export const createTeamSchema = z
  .object({ name: z.string({ error: 'name is required' }).trim().min(1, 'name must not be empty').max(100) })
  .strict();

/** `POST /teams/{team_id}/invite`: `role` defaults to member. */
export const inviteSchema = z
  .object({
    email: z.preprocess(
      (value) => (typeof value === 'string' ? value.trim() : value),
      z.email({ error: 'email must be an e-mail address' }).max(254),
    ),
    role: z.enum(['owner', 'member']).default('member'),
  })
  .strict();

/** `POST /teams/{team_id}/broadcast`. */
export const broadcastSchema = z
  .object({
    message: z
      .string({ error: 'message is required' })
      .trim()
      .min(1, 'message must not be empty')
      .max(broadcastMaxChars, `message may have at most ${broadcastMaxChars} characters`),
  })
  .strict();

/** `GET /teams/invitations/accept?token=`: 32 random bytes in base64url; anything else cannot be one. */
export const acceptQuerySchema = z.object({
  token: z.string({ error: 'token is required' }).min(1, 'token is required').max(200),
});

/** Ids in paths: `team_…`, `bc_…` (anything else is simply not found). */
export const pathIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
