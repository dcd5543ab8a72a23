/**
 * LINE and Telegram through their webhooks, played by the simulator in each platform's wire format and signing
 * scheme: a message becomes a durable turn answered through the platform's send API, forged or malformed deliveries
 * are refused with nothing stored, redeliveries are answered once, and the three ways of linking (code, session
 * id, deep link) give one history across web, LINE and Telegram, metered to the account once linked to one.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import pg from 'pg';
import { simulatedMessengerCredentials as credentials } from '../../scripts/lib/simulated-providers.ts';
import { callDirective as call } from '../helpers/agents.ts';
import { lineTextEvent, newLineUser, newTelegramChat, simulatedMessengers } from '../helpers/messengers.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { workflowClosed } from '../helpers/wait.ts';

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Pool;
let key: string;
let userId: string;

beforeAll(async () => {
  platform = await startTestPlatform({});
  const created = await platform.createKey();
  key = created.key;
  userId = created.user_id;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const { simulator, telegramSays, lineSays, sentTo, nextUpdateId } = simulatedMessengers(() => platform);

async function chat(body: Json, apiKey: string | null = key): Promise<Json> {
  const response = await platform.fetch('/api/v1/chat', {
    method: 'POST',
    body: JSON.stringify(body),
    ...(apiKey ? { key: apiKey } : {}),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

async function session(id: string, apiKey: string | null = key): Promise<Json> {
  const response = await platform.fetch(`/api/v1/sessions/${encodeURIComponent(id)}`, apiKey ? { key: apiKey } : {});
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

const codeIn = (text: string) => /\b(\d{6})\b/.exec(text)?.[1];

describe('Telegram', () => {
  it('answers a message through a durable turn that runs a tool, sent back with sendMessage', async () => {
    const chatId = newTelegramChat();
    const { status } = await telegramSays(chatId, `What is 6*7? ${call('calculator', { expression: '6*7' })}`);
    expect(status).toBe(200);
    const [answer] = await sentTo('telegram', chatId);
    expect(answer).toContain('42');
  });

  it('answers a redelivered update once', async () => {
    const chatId = newTelegramChat();
    const first = await telegramSays(chatId, 'Hello there');
    const again = await telegramSays(chatId, 'Hello there', first.id);
    expect([first.status, again.status]).toEqual([200, 200]);
    await sentTo('telegram', chatId);
    // The event's workflow (one id for both deliveries), the only sender of its answer, has ended.
    await workflowClosed(platform.environment.TEMPORAL_ADDRESS!, `messenger-telegram-${first.id}`);
    expect(await sentTo('telegram', chatId)).toHaveLength(1);
    const { rows } = await database.query(
      `select count(*)::int as turns from chat_turns t join chat_sessions s on s.conversation_id = t.conversation_id
       where s.key = $1`,
      [`telegram:${chatId}`],
    );
    expect(rows[0].turns).toBe(1);
  });

  it('refuses a wrong or missing secret token with 401 and stores nothing', async () => {
    const before = await database.query('select count(*)::int as n from messenger_events');
    const update = {
      update_id: nextUpdateId(),
      message: { message_id: 1, chat: { id: 5, type: 'private' }, text: 'hi' },
    };
    for (const headers of [{}, { 'x-telegram-bot-api-secret-token': 'wrong-secret' }]) {
      const response = await fetch(`${platform.gateway.url}/webhooks/telegram`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(update),
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as Json).error.type).toBe('authentication_error');
    }
    const after = await database.query('select count(*)::int as n from messenger_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('refuses a malformed update with 400 and stores nothing', async () => {
    const before = await database.query('select count(*)::int as n from messenger_events');
    for (const body of ['{not json', JSON.stringify({ message: { text: 'no update id' } }), JSON.stringify([1, 2])]) {
      const response = await fetch(`${platform.gateway.url}/webhooks/telegram`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-telegram-bot-api-secret-token': credentials.TELEGRAM_WEBHOOK_SECRET,
        },
        body,
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as Json).error.type).toBe('invalid_request');
    }
    const after = await database.query('select count(*)::int as n from messenger_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe('LINE', () => {
  it('answers a signed text message by pushing the answer to the user', async () => {
    const user = newLineUser();
    expect(await lineSays(user, `Weather in Tokyo? ${call('weather', { location: 'Tokyo' })}`)).toBe(200);
    const [answer] = await sentTo('line', user);
    expect(answer).toContain('Tokyo');
  });

  it('answers the console verification (no events) with 200', async () => {
    const delivered = await simulator('/line/_deliver', {
      webhook_url: `${platform.gateway.url}/webhooks/line`,
      channel_secret: credentials.LINE_CHANNEL_SECRET,
      events: [],
    });
    expect(delivered.status).toBe(200);
  });

  it('refuses a forged signature with 401 and stores nothing', async () => {
    const before = await database.query('select count(*)::int as n from messenger_events');
    const body = JSON.stringify({ destination: 'U0', events: [lineTextEvent(newLineUser(), 'hi')] });
    const forged = createHmac('sha256', 'not-the-channel-secret').update(body).digest('base64');
    for (const headers of [{}, { 'x-line-signature': forged }]) {
      const response = await fetch(`${platform.gateway.url}/webhooks/line`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      expect(response.status).toBe(401);
    }
    const after = await database.query('select count(*)::int as n from messenger_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('refuses a correctly signed but malformed body with 400', async () => {
    const body = JSON.stringify({ events: 'not a list' });
    const signature = createHmac('sha256', credentials.LINE_CHANNEL_SECRET).update(body).digest('base64');
    const response = await fetch(`${platform.gateway.url}/webhooks/line`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-line-signature': signature },
      body,
    });
    expect(response.status).toBe(400);
  });
});

describe('linking', () => {
  it('links web, Telegram and LINE by code into one history, metered to the account', async () => {
    const webSession = `web:${randomUUID()}`;
    await chat({ message: 'Remember the word pelican.', session_id: webSession, channel: 'web' });

    // /link on the web, /link CODE in Telegram.
    const issued = await chat({ message: '/link', session_id: webSession, channel: 'web' });
    expect(issued.command).toBe('link');
    expect(issued.response).toMatch(/Your link code is \d{6}/);
    const code = codeIn(issued.response as string)!;
    expect(code).toMatch(/^\d{6}$/);
    const chatId = newTelegramChat();
    await telegramSays(chatId, `/link ${code}`);
    expect((await sentTo('telegram', chatId))[0]).toContain('Linked');

    // The same code is single-use.
    const otherChat = newTelegramChat();
    await telegramSays(otherChat, `/link ${code}`);
    expect((await sentTo('telegram', otherChat))[0]).toMatch(/unknown or has expired/);

    // A Telegram message now runs in the account's conversation, metered to the account.
    await telegramSays(chatId, 'And what word did I ask you to remember?');
    const answers = await sentTo('telegram', chatId, 2);
    expect(answers[1]).toBeDefined();
    const { rows } = await database.query(
      `select count(*)::int as n from credit_ledger where user_id = $1 and kind = 'settle' and workflow_id like 'chat-%'`,
      [userId],
    );
    expect(rows[0].n).toBeGreaterThanOrEqual(2);

    // /link in LINE, /link CODE on the web: the third channel joins.
    const user = newLineUser();
    await lineSays(user, '/link');
    const lineCode = codeIn((await sentTo('line', user))[0]!)!;
    const joined = await chat({ message: `/link ${lineCode}`, session_id: webSession, channel: 'web' });
    expect(joined.response).toContain('Linked');
    await lineSays(user, 'Hello from LINE');
    await sentTo('line', user, 2);

    const view = await session(webSession);
    expect(view.resolved_key).not.toBe(webSession);
    const channels = new Set((view.messages as Json[]).map((message) => message.channel));
    expect([...channels].sort()).toEqual(['line', 'telegram', 'web']);
    const texts = (view.messages as Json[]).map((message) => message.content);
    expect(texts).toEqual(expect.arrayContaining(['Remember the word pelican.', 'Hello from LINE']));
    const listed = await platform.fetch('/api/v1/sessions', { key });
    const entry = ((await listed.json()) as Json).data.find((item: Json) => item.key === webSession);
    expect(entry.channels.sort()).toEqual(['line', 'telegram', 'web']);
  });

  it('links a guest web session by sending its id to the bot', async () => {
    const webSession = `web:${randomUUID()}`;
    await chat({ message: 'I am a guest on the web.', session_id: webSession }, null);
    const chatId = newTelegramChat();
    await telegramSays(chatId, webSession);
    expect((await sentTo('telegram', chatId))[0]).toContain('Linked');
    await telegramSays(chatId, 'Now from Telegram');
    await sentTo('telegram', chatId, 2);
    const view = await session(webSession, null);
    expect((view.messages as Json[]).map((message) => message.channel)).toContain('telegram');
  });

  it('links through the deep links of GET /api/v1/sessions/{id}/link', async () => {
    const webSession = `web:${randomUUID()}`;
    await chat({ message: 'Deep link me.', session_id: webSession }, null);
    const response = await platform.fetch(`/api/v1/sessions/${webSession}/link`);
    expect(response.status).toBe(200);
    const links = (await response.json()) as Json;
    expect(links.links.telegram).toMatch(/^https:\/\/t\.me\/tessera_sim_bot\?start=[A-Za-z0-9_-]+$/);
    expect(links.links.line).toMatch(/^https:\/\/line\.me\/R\/oaMessage\/%40tessera-sim\/\?/);
    const payload = new URL(links.links.telegram as string).searchParams.get('start');
    const chatId = newTelegramChat();
    await telegramSays(chatId, `/start ${payload}`);
    expect((await sentTo('telegram', chatId))[0]).toContain('Linked');
    // LINE's link pre-fills the session id for the user to send.
    const text = decodeURIComponent(new URL(links.links.line as string).search.slice(1));
    const user = newLineUser();
    await lineSays(user, text);
    expect((await sentTo('line', user))[0]).toContain('Linked');

    // A keyed session with a guessable id gets a code in its links instead.
    await chat({ message: 'Hi', session_id: 'api:default' });
    const coded = (await (await platform.fetch('/api/v1/sessions/api:default/link', { key })).json()) as Json;
    expect(coded.code).toMatch(/^\d{6}$/);
    expect(coded.links.telegram).toContain(`start=c${coded.code}`);
  });

  it('does not link by a guessable session id, and limits code attempts per chat', async () => {
    const chatId = newTelegramChat();
    await telegramSays(chatId, 'api:default');
    // Not a linking command: an ordinary message, answered by the model.
    expect((await sentTo('telegram', chatId))[0]).not.toContain('Linked');
    const guesser = newTelegramChat();
    for (let attempt = 0; attempt < 11; attempt++)
      await telegramSays(guesser, `/link ${String(attempt).padStart(6, '0')}`);
    // The 11th attempt is the one refused (each is counted before the webhook answers); the replies themselves are
    // sent by separate workflows and may arrive in any order.
    const replies = await sentTo('telegram', guesser, 11);
    expect(replies).toHaveLength(11);
    expect(replies.filter((reply) => /unknown or has expired/.test(reply))).toHaveLength(10);
    expect(replies.filter((reply) => /Too many link attempts/.test(reply))).toHaveLength(1);
  });
});
