/** `POST /a2a/tasks/send` (the spec's v0.1-style alias): its body and its answer (api/agents/routes/a2a/routes.ts). */
import { z } from 'zod';
import { maxA2aMessageChars } from './server.ts';

/** `{id, sessionId?, message: {role, parts}}`: `id` names a task of the caller's to continue, or a new one. */
export const aliasBodySchema = z
  .object({
    id: z.string().min(1).max(64),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,36}$/)
      .optional(),
    message: z.object({
      role: z.literal('user'),
      parts: z
        .array(
          z.union([
            z.object({ type: z.literal('text'), text: z.string().max(maxA2aMessageChars) }),
            z.object({ type: z.literal('data'), data: z.record(z.string(), z.unknown()) }),
          ]),
        )
        .min(1)
        .max(16),
    }),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** The task as the alias answers it; or, when the agent answered without a task, `{id, sessionId, message}`. */
export const aliasResponseSchema = z.union([
  z.strictObject({
    id: z.string(),
    sessionId: z.string(),
    status: z.strictObject({
      state: z.string().meta({ description: 'submitted, working, completed, failed, input-required, …' }),
      message: z.string().nullable(),
      timestamp: z.string().nullable(),
    }),
    artifacts: z.array(
      z.strictObject({
        name: z.string(),
        parts: z.array(z.strictObject({ type: z.literal('text'), text: z.string() })),
      }),
    ),
  }),
  z.strictObject({ id: z.string(), sessionId: z.string().nullable(), message: z.string() }),
]);
