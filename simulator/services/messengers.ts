/**
 * The two messaging platforms, played both ways: their send APIs (what the gateway calls) and their webhook
 * deliveries (what they send the gateway), each in the platform's real wire format and signing scheme.
 *
 * Telegram (`TELEGRAM_API_BASE_URL=${sim}/telegram`):
 * - `POST /telegram/bot<token>/getMe` → `{ok, result: {id, is_bot, first_name, username: 'tessera_sim_bot'}}`;
 *   `POST /telegram/bot<token>/sendMessage {chat_id, text}` → `{ok, result: Message}`. A token not shaped like
 *   Telegram's (`<digits>:<35 characters>`) is a 401, an empty or over-4096-character text a 400; a chat id starting
 *   `403` answers 403 "bot was blocked by the user".
 * - `POST /telegram/_deliver {webhook_url, secret_token, update}` posts the update to the webhook as Telegram does
 *   (JSON, `X-Telegram-Bot-Api-Secret-Token`) and answers `{status, body}`.
 *
 * LINE (`LINE_API_BASE_URL=${sim}`: the SDK keeps only the origin of its base URL, so the API is at the root):
 * - `POST /v2/bot/message/push {to, messages}` with `Authorization: Bearer <token>` and an optional
 *   `X-Line-Retry-Key` (a UUID): 1–5 text messages of at most 5,000 characters; a retry key seen before is LINE's
 *   409 with `x-line-accepted-request-id`, and nothing is sent twice. `GET /v2/bot/info` → `{userId, basicId:
 *   '@tessera-sim', displayName}`. No bearer token: 401.
 * - `POST /line/_deliver {webhook_url, channel_secret, events}` posts `{destination, events}` signed as LINE does
 *   (`X-Line-Signature`: base64 HMAC-SHA256 of the body with the channel secret) and answers `{status, body}`.
 *
 * Both: `GET /<platform>/_sent` lists the messages the gateway sent (`{messages: [{to, text}]}`), `DELETE` clears.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonObject, sendJson } from '../transport.ts';
import type { SimulatedService } from './index.ts';

export interface SentMessage {
  to: string;
  text: string;
  at: string;
}

const maxBodyBytes = 1024 * 1024;
const telegramTokenPattern = /^\d+:[A-Za-z0-9_-]{35}$/;

const sent: Record<'line' | 'telegram', SentMessage[]> = { line: [], telegram: [] };
const acceptedRetryKeys = new Map<string, string>();
let telegramMessageId = 1;

async function sentLog(platform: 'line' | 'telegram', request: IncomingMessage, response: ServerResponse) {
  if (request.method === 'DELETE') {
    sent[platform] = [];
    sendJson(response, 200, { deleted: true });
  } else {
    sendJson(response, 200, { messages: sent[platform] });
  }
}

/** Posts a webhook delivery the way the platform does and reports the gateway's answer. */
async function deliver(
  response: ServerResponse,
  url: unknown,
  body: string,
  headers: Record<string, string>,
): Promise<void> {
  if (typeof url !== 'string' || !/^https?:\/\//.test(url)) {
    sendJson(response, 400, { error: 'webhook_url must be an http(s) URL' });
    return;
  }
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  sendJson(response, 200, { status: answer.status, body: await answer.text() });
}

export const telegramService: SimulatedService = {
  prefix: '/telegram/',
  async handle(request, response, url) {
    const path = url.pathname.slice('/telegram'.length);
    if (path === '/_sent') return sentLog('telegram', request, response);
    const body = (await readJsonObject(request, maxBodyBytes)) ?? {};
    if (path === '/_deliver') {
      const headers: Record<string, string> =
        typeof body.secret_token === 'string' ? { 'x-telegram-bot-api-secret-token': body.secret_token } : {};
      return deliver(response, body.webhook_url, JSON.stringify(body.update ?? {}), headers);
    }
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(path);
    if (!match) return sendJson(response, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, token, method] = match;
    if (!telegramTokenPattern.test(token!)) {
      return sendJson(response, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    }
    if (method === 'getMe') {
      return sendJson(response, 200, {
        ok: true,
        result: { id: Number(token!.split(':')[0]), is_bot: true, first_name: 'Tessera', username: 'tessera_sim_bot' },
      });
    }
    if (method === 'sendMessage') {
      const chatId = body.chat_id;
      const text = body.text;
      if ((typeof chatId !== 'string' && typeof chatId !== 'number') || String(chatId) === '') {
        return sendJson(response, 400, { ok: false, error_code: 400, description: 'Bad Request: chat not found' });
      }
      if (typeof text !== 'string' || text.trim() === '') {
        return sendJson(response, 400, {
          ok: false,
          error_code: 400,
          description: 'Bad Request: message text is empty',
        });
      }
      if (text.length > 4096) {
        return sendJson(response, 400, { ok: false, error_code: 400, description: 'Bad Request: message is too long' });
      }
      if (String(chatId).startsWith('403')) {
        return sendJson(response, 403, {
          ok: false,
          error_code: 403,
          description: 'Forbidden: bot was blocked by the user',
        });
      }
      sent.telegram.push({ to: String(chatId), text, at: new Date().toISOString() });
      return sendJson(response, 200, {
        ok: true,
        result: {
          message_id: telegramMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chatId), type: 'private' },
          text,
        },
      });
    }
    return sendJson(response, 404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
  },
};

/** The simulator's side of LINE: its delivery log and webhook deliveries. */
export const lineControlService: SimulatedService = {
  prefix: '/line/',
  async handle(request, response, url) {
    const path = url.pathname.slice('/line'.length);
    if (path === '/_sent') return sentLog('line', request, response);
    if (path === '/_deliver') {
      const body = (await readJsonObject(request, maxBodyBytes)) ?? {};
      if (typeof body.channel_secret !== 'string') {
        return sendJson(response, 400, { error: 'channel_secret is required' });
      }
      const payload = JSON.stringify({ destination: 'Usimulatedbot0000000000000000000', events: body.events ?? [] });
      const signature = createHmac('sha256', body.channel_secret).update(payload).digest('base64');
      return deliver(response, body.webhook_url, payload, { 'x-line-signature': signature });
    }
    return sendJson(response, 404, { message: 'Not found' });
  },
};

/** LINE's Messaging API, at the root as on api.line.me (the SDK resolves its paths from the base URL's origin). */
export const lineService: SimulatedService = {
  prefix: '/v2/bot/',
  async handle(request, response, url) {
    const path = url.pathname;
    const authorization = request.headers.authorization ?? '';
    if (!/^Bearer \S+$/.test(authorization)) {
      return sendJson(response, 401, { message: 'Authentication failed. Confirm that the access token is valid.' });
    }
    if (request.method === 'GET' && path === '/v2/bot/info') {
      return sendJson(response, 200, {
        userId: 'Usimulatedbot0000000000000000000',
        basicId: '@tessera-sim',
        displayName: 'Tessera',
        chatMode: 'bot',
        markAsReadMode: 'auto',
      });
    }
    if (request.method === 'POST' && path === '/v2/bot/message/push') {
      const body = await readJsonObject(request, maxBodyBytes);
      const retryKey = request.headers['x-line-retry-key'];
      if (typeof retryKey === 'string') {
        if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(retryKey)) {
          return sendJson(response, 400, { message: 'The value for the X-Line-Retry-Key header is invalid' });
        }
        const accepted = acceptedRetryKeys.get(retryKey);
        if (accepted) {
          return sendJson(
            response,
            409,
            { message: 'The retry key is already accepted' },
            { 'x-line-accepted-request-id': accepted },
          );
        }
      }
      const messages = body?.messages;
      if (typeof body?.to !== 'string' || !Array.isArray(messages) || messages.length < 1 || messages.length > 5) {
        return sendJson(response, 400, {
          message: 'The request body has 1 error(s)',
          details: [{ property: 'messages' }],
        });
      }
      const texts: string[] = [];
      for (const message of messages as Array<{ type?: unknown; text?: unknown }>) {
        if (message.type !== 'text' || typeof message.text !== 'string' || message.text.length > 5000) {
          return sendJson(response, 400, {
            message: 'The request body has 1 error(s)',
            details: [{ property: 'text' }],
          });
        }
        texts.push(message.text);
      }
      const requestId = randomUUID();
      if (typeof retryKey === 'string') acceptedRetryKeys.set(retryKey, requestId);
      for (const text of texts) sent.line.push({ to: body.to, text, at: new Date().toISOString() });
      return sendJson(
        response,
        200,
        { sentMessages: texts.map(() => ({ id: String(Date.now()) })) },
        {
          'x-line-request-id': requestId,
        },
      );
    }
    return sendJson(response, 404, { message: 'Not found' });
  },
};
