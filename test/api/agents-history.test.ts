/**
 * The agent service's read side through HTTP: a session's history (paging, agent and tool names), the caller's
 * sessions, full-text search (ranking, snippets, isolation between users) and a session's usage from the credit
 * ledger. Conversations are seeded through the conversation store itself, and for usage by real turns of the
 * gateway's `POST /api/v1/chat` (the same store: the same user's sessions show on both services).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ConversationStore, type StoredMessage } from '../../activities/conversations/conversation-store.ts';
import { loadCatalogue } from '../../config/load-catalogue.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let database: pg.Pool;
let store: ConversationStore;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

beforeAll(async () => {
  platform = await startTestPlatform();
  alice = await platform.createKey();
  bob = await platform.createKey();
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  store = new ConversationStore(database);
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

async function get(path: string, key: string | null) {
  const response = await platform.agents(path, key ? { key } : {});
  return { status: response.status, body: (await response.json()) as Json };
}

/** A session of `userId` holding the given turns (a user message, then what answered it), each turn finished. */
async function seed(userId: string, key: string, turns: StoredMessage[][], channel = 'api') {
  const session = await store.openSession(`user:${userId}`, key, channel);
  for (const [first, ...answer] of turns) {
    const { opened } = await store.openTurn(
      { owner: `user:${userId}`, key, channel, session, agentId: null, message: first!.content! },
      { after: async () => undefined },
    );
    await store.appendMessages({ ...session, turn: opened.turn, channel }, answer, 1);
    await store.finishTurn(opened.turnId, 'done');
  }
  return session;
}

const user = (content: string): StoredMessage => ({ role: 'user', content });
const assistant = (content: string | null, agentId?: string): StoredMessage => ({
  role: 'assistant',
  content,
  ...(agentId ? { agentId } : {}),
});

describe('GET /history/{session_id}', () => {
  it('shows the session in order with channel, agent and tool names, and pages back with cursors', async () => {
    const key = `web:${randomUUID()}`;
    await seed(alice.user_id, key, [
      [user('What is the weather in Lyon?'), assistant('Sunny, 21 °C.', 'weather')],
      [
        user('And 2 + 2?'),
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'calculator', arguments: '{}' } }],
        },
        { role: 'tool', content: '4', toolCallId: 'call_1', toolName: 'calculator' },
        assistant('4', 'math'),
      ],
    ]);

    const whole = await get(`/history/${encodeURIComponent(key)}`, alice.key);
    expect(whole.status).toBe(200);
    expect(whole.body).toMatchObject({ session_id: key, message_count: 6, next_before: null });
    expect(whole.body.messages).toEqual([
      expect.objectContaining({ role: 'user', content: 'What is the weather in Lyon?', channel: 'api' }),
      expect.objectContaining({ role: 'assistant', content: 'Sunny, 21 °C.', agent_id: 'weather' }),
      expect.objectContaining({ role: 'user', content: 'And 2 + 2?' }),
      expect.objectContaining({ role: 'assistant', content: null }),
      expect.objectContaining({ role: 'tool', content: '4', tool_name: 'calculator' }),
      expect.objectContaining({ role: 'assistant', content: '4', agent_id: 'math' }),
    ]);
    expect(whole.body.messages[0]).not.toHaveProperty('agent_id');
    expect(whole.body.messages[0]).not.toHaveProperty('tool_name');
    expect(Date.parse(whole.body.messages[0].created_at)).not.toBeNaN();

    // Newest first by pages of 4, each page oldest first.
    const last = await get(`/history/${encodeURIComponent(key)}?limit=4`, alice.key);
    expect(last.body.messages.map((message: Json) => message.content)).toEqual(['And 2 + 2?', null, '4', '4']);
    expect(last.body.message_count).toBe(6);
    expect(last.body.next_before).toBe(last.body.messages[0].cursor);
    const older = await get(
      `/history/${encodeURIComponent(key)}?limit=4&before=${encodeURIComponent(last.body.next_before)}`,
      alice.key,
    );
    expect(older.body.messages.map((message: Json) => message.content)).toEqual([
      'What is the weather in Lyon?',
      'Sunny, 21 °C.',
    ]);
    expect(older.body.next_before).toBeNull();
  });

  it('answers 404 for another user’s session and one that does not exist, 401 without a login', async () => {
    const key = `web:${randomUUID()}`;
    await seed(alice.user_id, key, [[user('private words'), assistant('noted')]]);
    expect((await get(`/history/${encodeURIComponent(key)}`, bob.key)).status).toBe(404);
    expect((await get(`/usage/${encodeURIComponent(key)}`, bob.key)).status).toBe(404);
    const missing = await get(`/history/web:${randomUUID()}`, alice.key);
    expect(missing.status).toBe(404);
    expect(missing.body.error.type).toBe('not_found');
    expect((await get(`/history/${encodeURIComponent(key)}`, null)).status).toBe(401);
    expect((await get('/sessions', null)).status).toBe(401);
    expect((await get('/search/messages?q=private', null)).status).toBe(401);
  });

  it('refuses a malformed session id, limit or cursor', async () => {
    const key = `web:${randomUUID()}`;
    await seed(alice.user_id, key, [[user('hello'), assistant('hi')]]);
    const path = `/history/${encodeURIComponent(key)}`;
    for (const bad of [
      `/history/${'x'.repeat(129)}`,
      `/history/${encodeURIComponent('a b')}`,
      `/usage/${encodeURIComponent('semi;colon')}`,
      `${path}?limit=0`,
      `${path}?limit=501`,
      `${path}?limit=ten`,
      `${path}?before=yesterday`,
      `${path}?colour=red`,
    ]) {
      const answer = await get(bad, alice.key);
      expect([bad, answer.status, answer.body.error?.type]).toEqual([bad, 400, 'invalid_request']);
    }
    expect((await get(`${path}?limit=500`, alice.key)).status).toBe(200);
  });
});

describe('GET /sessions', () => {
  it('lists the caller’s sessions, most recently active first, with title, count, activity and channels', async () => {
    const carol = await platform.createKey();
    const long = `Plan   a\ntrip ${'to the mountains and the sea '.repeat(5)}`;
    await seed(carol.user_id, 'api:first', [[user(long), assistant('Sure.')]]);
    await seed(carol.user_id, 'web:second', [[user('Second session'), assistant('Yes.')]], 'web');
    await seed(bob.user_id, 'api:bobs', [[user('Bob’s own'), assistant('ok')]]);

    const { status, body } = await get('/sessions', carol.key);
    expect(status).toBe(200);
    expect(body.sessions).toEqual([
      expect.objectContaining({
        session_id: 'web:second',
        title: 'Second session',
        channels: ['web'],
        message_count: 2,
      }),
      expect.objectContaining({ session_id: 'api:first', channels: ['api'], message_count: 2 }),
    ]);
    const title: string = body.sessions[1].title;
    expect(title).toHaveLength(80);
    expect(title.startsWith('Plan a trip to the mountains')).toBe(true);
    expect(Date.parse(body.sessions[0].last_activity)).toBeGreaterThanOrEqual(
      Date.parse(body.sessions[1].last_activity),
    );
  });
});

describe('GET /search/messages', () => {
  it('finds the caller’s user and assistant messages across sessions, the one matching more terms first', async () => {
    const dave = await platform.createKey();
    await seed(dave.user_id, 'api:travel', [
      [user('Which trains go from Paris to Zurich?'), assistant('Several direct trains leave Paris daily.')],
    ]);
    await seed(dave.user_id, 'web:cooking', [
      [
        user('A recipe with saffron, please'),
        { role: 'assistant', content: 'Paris saffron risotto: toast the rice, add saffron and Zurich butter.' },
        { role: 'tool', content: 'saffron Paris Zurich tool output', toolCallId: 'call_x', toolName: 'web_search' },
      ],
    ]);
    await seed(bob.user_id, 'api:bob-saffron', [[user('saffron Paris Zurich from Bob'), assistant('ok')]]);

    const { status, body } = await get(
      `/search/messages?q=${encodeURIComponent('saffron or zurich or paris')}`,
      dave.key,
    );
    expect(status).toBe(200);
    expect(body.query).toBe('saffron or zurich or paris');
    expect(body.total).toBe(4);
    expect(body.results).toHaveLength(4);
    // The risotto answer holds all three words; the tool result and Bob's message are never found.
    expect(body.results[0]).toMatchObject({ session_id: 'web:cooking', role: 'assistant', channel: 'api' });
    expect(body.results[0].snippet).toContain('«saffron»');
    expect(body.results[0].snippet).toContain('«Zurich»');
    for (const result of body.results) {
      expect(['api:travel', 'web:cooking']).toContain(result.session_id);
      expect(result.rank).toBeGreaterThan(0);
      expect(Date.parse(result.created_at)).not.toBeNaN();
    }
    const ranks = body.results.map((result: Json) => result.rank as number);
    expect([...ranks].sort((a, b) => b - a)).toEqual(ranks);
    expect(body.results[0].rank).toBeGreaterThan(body.results[3].rank);

    // Plain words must all match; a limit cuts the page, not the total.
    const both = await get('/search/messages?q=paris%20trains', dave.key);
    expect(both.body.results.map((result: Json) => result.session_id)).toEqual(['api:travel', 'api:travel']);
    const limited = await get(`/search/messages?q=${encodeURIComponent('saffron or paris')}&limit=1`, dave.key);
    expect(limited.body).toMatchObject({ total: 4, results: [expect.objectContaining({ session_id: 'web:cooking' })] });
    // Bob sees only his own.
    const bobs = await get('/search/messages?q=saffron', bob.key);
    expect(bobs.body.results.map((result: Json) => result.session_id)).toEqual(['api:bob-saffron']);
    expect((await get('/search/messages?q=nothingmatchesthis', dave.key)).body).toMatchObject({
      results: [],
      total: 0,
    });
  });

  it('refuses a missing, empty or over-long q and a bad limit', async () => {
    for (const bad of [
      '/search/messages',
      '/search/messages?q=',
      '/search/messages?q=%20%20',
      `/search/messages?q=${'a'.repeat(501)}`,
      '/search/messages?q=x&limit=101',
    ]) {
      const answer = await get(bad, alice.key);
      expect([bad.slice(0, 40), answer.status, answer.body.error?.type]).toEqual([
        bad.slice(0, 40),
        400,
        'invalid_request',
      ]);
    }
    expect((await get(`/search/messages?q=${'a'.repeat(500)}`, alice.key)).status).toBe(200);
  });
});

describe('GET /usage/{session_id}', () => {
  it('sums the ledger’s settled tokens and credits of the session’s turns, priced per model', async () => {
    const erin = await platform.createKey();
    const key = `api:${randomUUID()}`;
    const chat = async (body: Json) => {
      const response = await platform.fetch('/api/v1/chat', {
        method: 'POST',
        key: erin.key,
        body: JSON.stringify({ session_id: key, ...body }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as Json;
    };
    await chat({ message: 'Hello there' });
    const second = await chat({ message: 'And again, on a pinned model', model: 'gpt-4o-2024-08-06' });
    await chat({ message: 'One more', model: 'gpt-4o-mini' });

    const { status, body } = await get(`/usage/${encodeURIComponent(key)}`, erin.key);
    expect(status).toBe(200);
    const { rows } = await database.query<{ model: string; prompt: string; completion: string; credits: string }>(
      `select model, sum(prompt_tokens) as prompt, sum(completion_tokens) as completion, sum(amount) as credits
       from credit_ledger where kind = 'settle' and user_id = $1 group by model order by model`,
      [erin.user_id],
    );
    expect(rows.map((row) => row.model)).toEqual(['gpt-4o-2024-08-06', 'gpt-4o-mini']);
    const { catalogue } = loadCatalogue({});
    const price = (id: string) => catalogue.models.find((model) => model.id === id)!.price;
    const cost = (row: (typeof rows)[number], model: string) =>
      (Number(row.prompt) * price(model).input_per_1m + Number(row.completion) * price(model).output_per_1m) / 1e6;
    const expected = [cost(rows[0]!, 'gpt-4o'), cost(rows[1]!, 'gpt-4o-mini')];

    expect(body).toMatchObject({
      session_id: key,
      turns: 3,
      input_tokens: rows.reduce((sum, row) => sum + Number(row.prompt), 0),
      output_tokens: rows.reduce((sum, row) => sum + Number(row.completion), 0),
    });
    expect(body.credits).toBe(rows.reduce((sum, row) => sum + Number(row.credits), 0));
    expect(body.by_model).toEqual([
      expect.objectContaining({ model: 'gpt-4o-2024-08-06', turns: 1, credits: second.credits, priced: true }),
      expect.objectContaining({ model: 'gpt-4o-mini', turns: 2, priced: true }),
    ]);
    expect(body.by_model[0].cost_usd).toBeCloseTo(expected[0]!, 7);
    expect(body.by_model[1].cost_usd).toBeCloseTo(expected[1]!, 7);
    expect(body.cost_usd).toBeCloseTo(expected[0]! + expected[1]!, 7);
    expect(body.cost_usd).toBeGreaterThan(0);

    // The same session, as the gateway made it, in the agent service's history and list.
    const history = await get(`/history/${encodeURIComponent(key)}`, erin.key);
    expect(history.body.messages.filter((message: Json) => message.role === 'user')).toHaveLength(3);
    const sessions = await get('/sessions', erin.key);
    expect(sessions.body.sessions).toEqual([expect.objectContaining({ session_id: key, title: 'Hello there' })]);

    // A session without turns costs nothing.
    await store.openSession(`user:${erin.user_id}`, 'api:empty', 'api');
    expect((await get('/usage/api:empty', erin.key)).body).toEqual({
      session_id: 'api:empty',
      turns: 0,
      input_tokens: 0,
      output_tokens: 0,
      credits: 0,
      cost_usd: 0,
      by_model: [],
    });
  });
});
