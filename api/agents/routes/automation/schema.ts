/** Request body of the automation routes (routes.ts), strict. */
import { z } from 'zod';
import { chatRequestSchema } from '../../../../common/chat-turn.ts';

/** `POST /automation/trigger`: what Zapier, Make and n8n send. */
export const triggerSchema = z
  .object({
    agent_id: z.string().min(1).max(128),
    message: chatRequestSchema.shape.message,
    session_id: chatRequestSchema.shape.session_id.optional(),
    callback_url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
  })
  .strict();
