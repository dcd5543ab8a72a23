/**
 * LINE's Messaging API through the official SDK (@line/bot-sdk): answers are pushed (`/v2/bot/message/push`) with
 * an `X-Line-Retry-Key`, which LINE honours for 24 hours, so a retried send is delivered once. The reply API would
 * be free of quota but its token is single-use and short-lived, and a reply whose outcome was lost cannot be
 * retried safely; durable turns may also answer after the token expired. Webhook signatures are checked with the
 * SDK's `validateSignature` (api/gateway/routes/webhooks/line.ts).
 *
 * LINE has no deep link that passes a parameter when the bot is added (Telegram's `start`); its equivalent here is
 * the `oaMessage` URL, which opens the chat with the bot and a pre-filled message (the session id) that the user
 * sends: linking way 2 of spec 4.9.
 */
import { createHash } from 'node:crypto';
import type * as LineSdk from '@line/bot-sdk';
import { MessengerRejection, type MessengerClient } from './messenger.ts';
import { loadOnce } from '../../process/load-once.ts';
import type { MessengerSettings } from '../../common/messengers.ts';

/** LINE's limits: characters of one text message, messages per push. */
const maxMessageChars = 5000;
const messagesPerPush = 5;

export class LineClient implements MessengerClient {
  readonly maxMessageChars = maxMessageChars;
  /** The SDK and its client, imported and made at the first call (the SDK is about 20 MiB; issue 29). */
  private readonly load: () => Promise<{ sdk: typeof LineSdk; client: LineSdk.messagingApi.MessagingApiClient }>;
  private basicId: Promise<string> | null = null;

  constructor(settings: NonNullable<MessengerSettings['line']>) {
    this.load = loadOnce(async () => {
      const sdk = await import('@line/bot-sdk');
      const client = new sdk.messagingApi.MessagingApiClient({
        channelAccessToken: settings.channelAccessToken,
        baseURL: settings.apiBaseUrl,
      });
      return { sdk, client };
    });
  }

  async send(
    to: string,
    parts: string[],
    firstPart: number,
    idempotencyKey: string,
    sent: (delivered: number) => Promise<void>,
  ): Promise<void> {
    const { sdk, client } = await this.load();
    for (let index = firstPart; index < parts.length; index += messagesPerPush) {
      const batch = parts.slice(index, index + messagesPerPush);
      const retryKey = retryKeyOf(`${idempotencyKey}:${index}`);
      try {
        await client.pushMessage({ to, messages: batch.map((text) => ({ type: 'text', text })) }, retryKey);
      } catch (error) {
        // 409: this retry key was accepted before (the earlier attempt's answer was lost): delivered.
        if (!(error instanceof sdk.HTTPFetchError && error.status === 409)) throw classify(sdk, error);
      }
      await sent(index + batch.length);
    }
  }

  async deepLink(payload: string): Promise<string | null> {
    this.basicId ??= this.load().then(({ client }) => client.getBotInfo().then((info) => info.basicId));
    try {
      return `https://line.me/R/oaMessage/${encodeURIComponent(await this.basicId)}/?${encodeURIComponent(payload)}`;
    } catch (error) {
      this.basicId = null;
      throw error;
    }
  }
}

/** LINE wants a UUID as retry key: one derived from the answer's name, so every retry of a part reuses it. */
function retryKeyOf(name: string): string {
  const hex = createHash('sha256').update(name).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function classify(sdk: typeof LineSdk, error: unknown): Error {
  if (error instanceof sdk.HTTPFetchError) {
    const message = `LINE answered ${error.status}: ${error.body}`;
    if (error.status >= 400 && error.status < 500 && error.status !== 429) return new MessengerRejection(message);
    return new Error(message);
  }
  return error instanceof Error ? error : new Error(String(error));
}
