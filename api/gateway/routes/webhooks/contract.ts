/** Contracts of the LINE and Telegram webhooks (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, route } from '../../../openapi/contract.ts';
import { lineCallbackSchema, telegramUpdateSchema } from './schema.ts';

const tags = ['Messaging apps'];

export const messengerWebhookContracts = [
  route({
    method: 'POST',
    path: '/webhooks/line',
    summary: 'LINE’s Messaging API webhook',
    description: 'Authenticated by `X-Line-Signature` (HMAC-SHA256 of the raw body with the channel secret).',
    tags,
    access: 'signed',
    request: {
      content: { 'application/json': { schema: lineCallbackSchema } },
      headers: z.object({ 'x-line-signature': z.string() }),
    },
    responses: { 200: json(z.strictObject({}), 'Received') },
    errors: { 503: 'LINE is not configured' },
  }),
  route({
    method: 'POST',
    path: '/webhooks/telegram',
    summary: 'Telegram’s Bot API webhook',
    description: 'Authenticated by `X-Telegram-Bot-Api-Secret-Token` (TELEGRAM_WEBHOOK_SECRET).',
    tags,
    access: 'signed',
    request: {
      content: { 'application/json': { schema: telegramUpdateSchema } },
      headers: z.object({ 'x-telegram-bot-api-secret-token': z.string() }),
    },
    responses: { 200: json(z.strictObject({ ok: z.literal(true) }), 'Received') },
    errors: { 503: 'Telegram is not configured' },
  }),
];
