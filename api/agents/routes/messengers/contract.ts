/** Contract of `POST /send-to-messenger` (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, route } from '../../../openapi/contract.ts';
import { sendSchema } from './schema.ts';

export const messengerContracts = [
  route({
    method: 'POST',
    path: '/send-to-messenger',
    summary: 'Send a text to the caller’s own linked LINE, Telegram or Slack chats',
    tags: ['Messaging apps'],
    access: 'caller',
    request: { body: sendSchema, headers: z.object({ 'idempotency-key': z.string().optional() }) },
    responses: {
      200: json(
        z.strictObject({
          sent: z.array(
            z.strictObject({
              channel: z.enum(['line', 'telegram', 'slack']),
              chat: z.string(),
              parts: z.number().int(),
            }),
          ),
        }),
        'Sent, in parts as the platform needs',
      ),
    },
    errors: {
      404: 'No such chat linked to the caller’s account',
      502: 'The platform refused the message',
      503: 'The channel is not configured',
    },
  }),
];
