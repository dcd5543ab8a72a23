/** The bodies LINE's and Telegram's webhooks send (the fields read here; the rest is let through). */
import { z } from 'zod';

export const lineSourceSchema = z.union([
  z.object({ type: z.literal('user'), userId: z.string().min(1) }),
  z.object({ type: z.literal('group'), groupId: z.string().min(1) }),
  z.object({ type: z.literal('room'), roomId: z.string().min(1) }),
]);

const lineEventSchema = z.looseObject({
  type: z.string(),
  webhookEventId: z.string().min(1),
  timestamp: z.number(),
  source: lineSourceSchema.optional(),
  message: z.looseObject({ type: z.string(), id: z.string(), text: z.string().optional() }).optional(),
});

export const lineCallbackSchema = z.object({ destination: z.string(), events: z.array(lineEventSchema) });

/** A Telegram Bot API update. */
export const telegramUpdateSchema = z.object({
  update_id: z.number().int().nonnegative(),
  message: z
    .object({
      message_id: z.number().int(),
      chat: z.object({ id: z.number().int(), type: z.string() }),
      text: z.string().optional(),
    })
    .optional(),
});
