/**
 * `POST /webhooks/telegram`: Telegram's Bot API updates (register the URL with setWebhook and its `secret_token`
 * set to TELEGRAM_WEBHOOK_SECRET). Telegram sends that secret in `X-Telegram-Bot-Api-Secret-Token`; a request
 * without the right one is answered 401 and nothing is stored. Only `message` updates are read (text, and
 * `/start <payload>` from deep links); other updates are acknowledged and ignored. The answer is 200 as soon as the
 * message is durably in hand (inbound.ts): Telegram redelivers an update until it gets a 2xx.
 */
import Router from '@koa/router';
import { timingSafeEqual } from 'node:crypto';
import type { MessengerSettings } from '../../../../common/messengers.ts';
import { ApiError } from '../../../errors.ts';
import { parseJsonBody, readRawBody } from '../../../raw-body.ts';
import type { MessengerInbox } from './inbound.ts';
import { telegramUpdateSchema as updateSchema } from './schema.ts';

/** Updates are small; this bounds a hostile body. */
const bodyLimit = 256 * 1024;

export function telegramWebhookRoutes(settings: MessengerSettings['telegram'], inbox: MessengerInbox) {
  const router = new Router();
  router.post('/webhooks/telegram', async (context) => {
    if (!settings) {
      throw new ApiError(
        'service_unavailable',
        'Telegram is not configured here (TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET)',
      );
    }
    if (!secretMatches(context.get('x-telegram-bot-api-secret-token'), settings.webhookSecret)) {
      throw new ApiError('authentication_error', 'X-Telegram-Bot-Api-Secret-Token is missing or wrong');
    }
    const raw = await readRawBody(context.req, bodyLimit);
    const { update_id: updateId, message } = parseJsonBody(raw, updateSchema);
    if (message) {
      await inbox.receive({
        platform: 'telegram',
        eventId: String(updateId),
        chat: String(message.chat.id),
        text: message.text ?? null,
      });
    }
    context.body = { ok: true };
  });
  return router;
}

function secretMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
