/**
 * `POST /webhooks/line`: LINE's Messaging API webhook. The `X-Line-Signature` header (HMAC-SHA256 of the exact
 * body with the channel secret, base64) is checked with the official SDK's `validateSignature`; a missing or wrong
 * one is answered 401 and nothing is stored. Text messages become chat turns, `follow` (the bot added) a greeting;
 * other events are acknowledged and ignored. A body with no events (the console's "Verify" button) is answered
 * 200. Events are deduplicated by `webhookEventId` (inbound.ts), which LINE keeps across redeliveries.
 */
import Router from '@koa/router';
import type { z } from 'zod';
import type { MessengerSettings } from '../../../../common/messengers.ts';
import { ApiError } from '../../../errors.ts';
import type { lineSourceSchema as sourceSchema } from './schema.ts';
import { lineCallbackSchema as callbackSchema } from './schema.ts';
import { parseJsonBody, readRawBody } from '../../../raw-body.ts';
import type { MessengerInbox } from './inbound.ts';

/** LINE batches events; this bounds a hostile body. */
const bodyLimit = 1024 * 1024;

export function lineWebhookRoutes(settings: MessengerSettings['line'], inbox: MessengerInbox) {
  const router = new Router();
  router.post('/webhooks/line', async (context) => {
    if (!settings) {
      throw new ApiError(
        'service_unavailable',
        'LINE is not configured here (LINE_CHANNEL_SECRET, LINE_CHANNEL_ACCESS_TOKEN)',
      );
    }
    const raw = await readRawBody(context.req, bodyLimit);
    const signature = context.get('x-line-signature');
    // The SDK is imported at the first delivery, not at the process's start (issue 29).
    const { validateSignature } = await import('@line/bot-sdk');
    if (!signature || !validateSignature(raw, settings.channelSecret, signature)) {
      throw new ApiError('authentication_error', 'X-Line-Signature is missing or does not match the body');
    }
    const { events } = parseJsonBody(raw, callbackSchema);
    for (const event of events) {
      const chat = chatOf(event.source);
      if (!chat) continue;
      if (event.type === 'message') {
        const text = event.message?.type === 'text' ? (event.message.text ?? '') : null;
        await inbox.receive({ platform: 'line', eventId: event.webhookEventId, chat, text });
      } else if (event.type === 'follow') {
        await inbox.receive({ platform: 'line', eventId: event.webhookEventId, chat, text: null, greeting: true });
      }
    }
    context.body = {};
  });
  return router;
}

function chatOf(source: z.infer<typeof sourceSchema> | undefined): string | null {
  if (!source) return null;
  if (source.type === 'user') return source.userId;
  if (source.type === 'group') return source.groupId;
  return source.roomId;
}
