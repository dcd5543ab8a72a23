/** Request body of the messengers routes (routes.ts), strict. */
import { z } from 'zod';

/** `POST /send-to-messenger`. */
export const sendSchema = z
  .object({
    channel: z.enum(['line', 'telegram', 'slack']),
    text: z.string().trim().min(1).max(32_000),
    chat: z.string().min(1).max(200).optional(),
  })
  .strict();
