/**
 * Telegram and LINE for a test file, played by the platform's simulator (which speaks each platform's wire format and
 * signs as each does): a message delivered from a chat to the gateway's webhook, what the gateway sent to a chat, and
 * linking a chat to an account by `/link CODE`. One place for the delivery shapes, so every messenger test sends the
 * same updates and events.
 */
import { expect } from '@jest/globals';
import { randomInt, randomUUID } from 'node:crypto';
import { simulatedMessengerCredentials as credentials } from '../../scripts/lib/simulated-providers.ts';
import type { TestPlatform } from './platform.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

export type MessengerName = 'line' | 'telegram';

/** A new Telegram private chat id, and a new LINE user id. */
export const newTelegramChat = () => String(randomInt(100_000_000, 999_999_999));
export const newLineUser = () => `U${randomUUID().replace(/-/g, '')}`;

/** A LINE `message` webhook event carrying `text` from `user`. */
export function lineTextEvent(user: string, text: string, eventId: string = randomUUID()) {
  return {
    type: 'message',
    mode: 'active',
    timestamp: Date.now(),
    webhookEventId: eventId,
    deliveryContext: { isRedelivery: false },
    replyToken: randomUUID().replace(/-/g, ''),
    source: { type: 'user', userId: user },
    message: { type: 'text', id: String(randomInt(1e9, 2e9)), quoteToken: 'q', text },
  };
}

export interface SimulatedMessengers {
  /** A call to the simulator's own endpoints: GET without a body, POST (JSON) with one; the JSON answer. */
  simulator(path: string, body?: unknown): Promise<Json>;
  /** A fresh Telegram update id (one counter per file, so a redelivery is only ever a deliberate one). */
  nextUpdateId(): number;
  /** Telegram delivering a text message from `chat` (with the webhook's secret token); the webhook's status. */
  telegramSays(chat: string, text: string, id?: number): Promise<{ status: number; id: number }>;
  /** LINE delivering a text message from `user` (signed with the channel secret); the webhook's status. */
  lineSays(user: string, text: string, eventId?: string): Promise<number>;
  /** What the gateway sent to `to` on the platform, waiting (up to `ms`) until there are at least `count`. */
  sentTo(platformName: MessengerName, to: string, count?: number, ms?: number): Promise<string[]>;
  /**
   * Links a chat to the account `auth` authenticates: a code from the agent service's `GET /link/code`, `/link CODE`
   * sent from the chat, and the chat's confirmation awaited.
   */
  link(platformName: MessengerName, chat: string, auth: { key?: string; cookie?: string }): Promise<void>;
}

/** The messengers of `platform` (or of the platform a getter returns when called: one started later in beforeAll). */
export function simulatedMessengers(of: TestPlatform | (() => TestPlatform)): SimulatedMessengers {
  const current = () => (typeof of === 'function' ? of() : of);
  let updateId = randomInt(1_000_000, 6_000_000);

  const simulator: SimulatedMessengers['simulator'] = async (path, body) => {
    const response = await fetch(`${current().simulatorUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return (await response.json()) as Json;
  };

  const telegramSays: SimulatedMessengers['telegramSays'] = async (chat, text, id = ++updateId) => {
    const delivered = await simulator('/telegram/_deliver', {
      webhook_url: `${current().gateway.url}/webhooks/telegram`,
      secret_token: credentials.TELEGRAM_WEBHOOK_SECRET,
      update: {
        update_id: id,
        message: {
          message_id: id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chat), type: 'private' },
          text,
        },
      },
    });
    return { status: delivered.status as number, id };
  };

  const lineSays: SimulatedMessengers['lineSays'] = async (user, text, eventId: string = randomUUID()) => {
    const delivered = await simulator('/line/_deliver', {
      webhook_url: `${current().gateway.url}/webhooks/line`,
      channel_secret: credentials.LINE_CHANNEL_SECRET,
      events: [lineTextEvent(user, text, eventId)],
    });
    return delivered.status as number;
  };

  const sentTo: SimulatedMessengers['sentTo'] = async (platformName, to, count = 1, ms = 30_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const { messages } = await simulator(`/${platformName}/_sent`);
      const texts = (messages as Array<{ to: string; text: string }>).filter((m) => m.to === to).map((m) => m.text);
      if (texts.length >= count || Date.now() > deadline) return texts;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  const link: SimulatedMessengers['link'] = async (platformName, chat, auth) => {
    const issued = await current().agents('/link/code', { ...auth, headers: { accept: 'application/json' } });
    expect(issued.status).toBe(200);
    const { code } = (await issued.json()) as Json;
    expect(code).toMatch(/^\d{6}$/);
    const status =
      platformName === 'line'
        ? await lineSays(chat, `/link ${code as string}`)
        : (await telegramSays(chat, `/link ${code as string}`)).status;
    expect(status).toBe(200);
    // The confirmation is the chat's first message (a turn on a loaded machine can take a while).
    const [confirmation] = await sentTo(platformName, chat, 1, 60_000);
    expect(confirmation).toContain('Linked');
  };

  return { simulator, nextUpdateId: () => ++updateId, telegramSays, lineSays, sentTo, link };
}
