/** Bodies and queries of the agent service's login, linking and key endpoints (routes.ts). */
import { z } from 'zod';

/** `POST /auth/register`. */
export const registerBodySchema = z.object({
  email: z.preprocess(
    (value) => (typeof value === 'string' ? value.trim() : value),
    z.email({ error: 'email must be an e-mail address' }).max(254),
  ),
});

/** `GET /auth/verify?token=`: the token is 32 random bytes in base64url; anything else cannot be one. */
export const verifyQuerySchema = z.object({
  token: z.string({ error: 'token is required' }).min(1, 'token is required').max(200),
});

/** `POST /link/verify`: a code made by `/link` in a messaging app. */
export const linkVerifyBodySchema = z.object({
  code: z
    .string({ error: 'code is required' })
    .trim()
    .regex(/^\d{6}$/, 'code must be the 6 digits /link answered'),
});

/** `POST /api/keys`. */
export const createKeyBodySchema = z.object({
  name: z.string().trim().min(1).max(100).optional(),
});
