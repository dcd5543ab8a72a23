/**
 * Telegram's Bot API, plain HTTPS (no SDK: Telegram publishes none for Node, and the two methods used here are
 * one POST each): `sendMessage` for answers and `getMe` for the bot's username (deep links). Webhook updates are
 * authenticated by the secret token Telegram echoes in `X-Telegram-Bot-Api-Secret-Token` (set with setWebhook's
 * `secret_token`); see api/gateway/routes/webhooks/telegram.ts.
 */
import { z } from 'zod';
import { MessengerRejection, type MessengerClient } from './messenger.ts';
import type { MessengerSettings } from '../../common/messengers.ts';

const apiResponse = z.object({
  ok: z.boolean(),
  result: z.unknown().optional(),
  description: z.string().optional(),
  error_code: z.number().optional(),
  parameters: z.object({ retry_after: z.number().optional() }).optional(),
});

/** Telegram's limit for one message's text. */
const maxMessageChars = 4096;
const requestTimeoutMs = 15_000;

export class TelegramClient implements MessengerClient {
  readonly maxMessageChars = maxMessageChars;
  private readonly settings: NonNullable<MessengerSettings['telegram']>;
  private username: Promise<string> | null = null;

  constructor(settings: NonNullable<MessengerSettings['telegram']>) {
    this.settings = settings;
  }

  async send(
    to: string,
    parts: string[],
    firstPart: number,
    _idempotencyKey: string,
    sent: (delivered: number) => Promise<void>,
  ): Promise<void> {
    for (let index = firstPart; index < parts.length; index++) {
      await this.call('sendMessage', { chat_id: to, text: parts[index] });
      await sent(index + 1);
    }
  }

  async deepLink(payload: string): Promise<string | null> {
    this.username ??= this.call('getMe', {}).then((me) => z.object({ username: z.string() }).parse(me).username);
    try {
      return `https://t.me/${await this.username}?start=${payload}`;
    } catch (error) {
      this.username = null;
      throw error;
    }
  }

  /** One Bot API method; 4xx other than 429 is a rejection, the rest (5xx, 429, network) may be retried. */
  private async call(method: string, body: Record<string, unknown>): Promise<unknown> {
    const url = `${this.settings.apiBaseUrl.replace(/\/$/, '')}/bot${this.settings.botToken}/${method}`;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const parsed = apiResponse.safeParse(await response.json().catch(() => null));
    if (response.ok && parsed.success && parsed.data.ok) return parsed.data.result;
    const description = parsed.success ? parsed.data.description : undefined;
    const message = `Telegram ${method} answered ${response.status}${description ? `: ${description}` : ''}`;
    if (response.status >= 400 && response.status < 500 && response.status !== 429) {
      throw new MessengerRejection(message);
    }
    throw new Error(message);
  }
}
