/** `POST /chat/suggest`: its body and its answer (api/agents/routes/suggest/routes.ts). */
import { z } from 'zod';

export const suggestBodySchema = z
  .strictObject({
    session_id: z.string().min(1).max(200).optional(),
    message: z.string().min(1).max(8_000).optional(),
    count: z.number().int().min(1).max(5).default(3),
  })
  .refine((body) => body.session_id !== undefined || body.message !== undefined, {
    message: 'Send session_id, message, or both',
    path: ['session_id'],
  });

export const suggestResponseSchema = z.strictObject({
  suggestions: z.array(z.string()),
  /** The model that wrote them. */
  model: z.string(),
});
