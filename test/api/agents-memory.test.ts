/**
 * Memory on the agent service (spec 4.4): add, list by importance, keyword search and its ranking, delete, other
 * users' memories refused and invisible; the save_memory tool run through the tool runtime with a real store; and
 * `relevant`, what a chat turn loads into the agent's context. Real HTTP, real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { MemoryStore, anyWordQuery } from '../../activities/memory/memory-store.ts';
import { runTool } from '../../activities/tools/runtime.ts';
import { saveMemoryTool } from '../../activities/tools/save-memory.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { testToolSettings } from '../helpers/tool-settings.ts';

let platform: TestPlatform;
let pool: pg.Pool;
let store: MemoryStore;

beforeAll(async () => {
  platform = await startTestPlatform();
  pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  store = new MemoryStore(pool);
}, 300_000);

afterAll(async () => {
  await pool?.end();
  await platform?.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function call(path: string, init: { key?: string; method?: string; body?: unknown } = {}) {
  const response = await platform.agents(path, {
    key: init.key,
    method: init.method ?? 'GET',
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

async function add(key: string, content: string, importance?: number) {
  const response = await call('/memory/add', { key, method: 'POST', body: { content, importance } });
  expect(response.status).toBe(201);
  return response.body as { id: string; content: string; importance: number; source: string };
}

describe('memories over HTTP', () => {
  it('adds memories and lists them by importance, then newest first', async () => {
    const { key } = await platform.createKey();
    const low = await add(key, 'The user once visited Oslo.', 0.2);
    const high = await add(key, '  The user is allergic to peanuts.  ', 0.9);
    const middle = await add(key, 'The user prefers metric units.');
    const middleLater = await add(key, 'The user works as a nurse.', 0.5);
    expect(high).toMatchObject({
      id: expect.stringMatching(/^mem_/),
      content: 'The user is allergic to peanuts.',
      source: 'user',
    });
    expect(middle.importance).toBe(0.5);
    const { status, body } = await call('/memory/list', { key });
    expect(status).toBe(200);
    expect(body.memories.map((memory: Json) => memory.id)).toEqual([high.id, middleLater.id, middle.id, low.id]);
    expect((await call('/memory/list?limit=2', { key })).body.memories).toHaveLength(2);
  });

  it('keeps one memory per content: the same text again updates its importance', async () => {
    const { key } = await platform.createKey();
    const first = await add(key, 'The user has two cats.', 0.3);
    const again = await call('/memory/add', {
      key,
      method: 'POST',
      body: { content: 'the user  has two CATS.', importance: 0.8 },
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, importance: 0.8, content: 'The user has two cats.' });
    expect((await call('/memory/list', { key })).body.memories).toHaveLength(1);
  });

  it('ranks search results: more of the query’s words first, then more occurrences; stemmed', async () => {
    const { key } = await platform.createKey();
    const one = await add(key, 'The user drinks coffee.', 0.9);
    const all = await add(key, 'Coffee preferences: espresso, no sugar, in the morning.', 0.1);
    const two = await add(key, 'The user likes espresso coffee.', 0.5);
    const repeated = await add(key, 'Coffee, coffee, coffee: the user lives on coffee.', 0.5);
    await add(key, 'The user plays tennis on Sundays.', 1);
    const { status, body } = await call(`/memory/search?q=${encodeURIComponent('espresso coffee preference')}`, {
      key,
    });
    expect(status).toBe(200);
    const ids = body.memories.map((memory: Json) => memory.id);
    expect(ids).toEqual([all.id, two.id, repeated.id, one.id]);
    expect(body.memories[0].rank).toBeGreaterThan(body.memories[1].rank);
    // Stemming: "prefer" finds "preferences"; one word is enough to match.
    const stemmed = await call('/memory/search?q=prefer', { key });
    expect(stemmed.body.memories.map((memory: Json) => memory.id)).toEqual([all.id]);
    // Same rank: the more important first.
    const tie = await call('/memory/search?q=user', { key });
    expect(tie.body.memories[0].importance).toBe(1);
  });

  it('falls back to a substring match for a query without indexable words, and needs q', async () => {
    const { key } = await platform.createKey();
    const cpp = await add(key, 'The user writes C++ at work.');
    await add(key, 'The user writes Rust at home.');
    const found = await call(`/memory/search?q=${encodeURIComponent('C++')}`, { key });
    // "C++" is indexed as the word "c": it finds the memory containing it, not the other one.
    expect(found.body.memories.map((memory: Json) => memory.id)).toEqual([cpp.id]);
    // "at" is a stop word: no indexable word, so a substring match (both contain "at").
    const stopWords = await call(`/memory/search?q=${encodeURIComponent('at')}`, { key });
    expect(stopWords.body.memories).toHaveLength(2);
    const percent = await call(`/memory/search?q=${encodeURIComponent('%')}`, { key });
    expect(percent.body.memories).toEqual([]);
    for (const path of ['/memory/search', '/memory/search?q=', '/memory/search?q=%20%20']) {
      const response = await call(path, { key });
      expect([path, response.status, response.body.error.type]).toEqual([path, 400, 'invalid_request']);
    }
  });

  it('deletes a memory', async () => {
    const { key } = await platform.createKey();
    const memory = await add(key, 'Temporary fact.');
    expect(await call(`/memory/${memory.id}`, { key, method: 'DELETE' })).toEqual({
      status: 200,
      body: { id: memory.id, deleted: true },
    });
    expect((await call('/memory/list', { key })).body.memories).toEqual([]);
    expect((await call(`/memory/${memory.id}`, { key, method: 'DELETE' })).status).toBe(404);
  });

  it('refuses bad bodies and anonymous callers', async () => {
    const { key } = await platform.createKey();
    for (const body of [
      {},
      { content: '' },
      { content: 'x'.repeat(4001) },
      { content: 'ok', importance: 2 },
      { content: 'ok', extra: 1 },
    ]) {
      const response = await call('/memory/add', { key, method: 'POST', body });
      expect(response.status).toBe(400);
    }
    expect((await call('/memory/list', { key })).body.memories).toEqual([]);
    expect((await call('/memory/list')).status).toBe(401);
    expect((await call('/memory/search?q=x')).status).toBe(401);
    expect((await call('/memory/add', { method: 'POST', body: { content: 'x' } })).status).toBe(401);
    expect((await call('/memory/mem_x', { method: 'DELETE' })).status).toBe(401);
  });

  it('never shows or deletes another user’s memory', async () => {
    const owner = await platform.createKey();
    const stranger = await platform.createKey();
    const secret = await add(owner.key, 'The owner’s bank is Northwind Savings.', 1);
    expect((await call(`/memory/${secret.id}`, { key: stranger.key, method: 'DELETE' })).status).toBe(404);
    expect((await call('/memory/list', { key: stranger.key })).body.memories).toEqual([]);
    expect((await call('/memory/search?q=northwind%20bank', { key: stranger.key })).body.memories).toEqual([]);
    // The same content is the stranger's own memory, not the owner's.
    const own = await add(stranger.key, 'The owner’s bank is Northwind Savings.', 0.1);
    expect(own.id).not.toBe(secret.id);
    const ownerView = await call('/memory/search?q=northwind', { key: owner.key });
    expect(ownerView.body.memories).toEqual([expect.objectContaining({ id: secret.id, importance: 1 })]);
  });
});

describe('the save_memory tool', () => {
  const context = (userId: string | null, services = true) => ({
    conversationId: 'conv_memory_test',
    userId,
    callKey: 'call_1',
    settings: testToolSettings(),
    services: services ? { memories: store } : {},
  });

  it('saves a memory for the user, once even when the call is retried', async () => {
    const { key, user_id } = await platform.createKey();
    const args = JSON.stringify({ content: 'The user is learning Portuguese.', importance: 0.7 });
    const first = await runTool(saveMemoryTool, args, context(user_id));
    expect(first.ok).toBe(true);
    const saved = JSON.parse(first.content) as { saved: boolean; memory_id: string };
    expect(saved).toMatchObject({ saved: true, memory_id: expect.stringMatching(/^mem_/) });
    const retried = await runTool(saveMemoryTool, args, context(user_id));
    expect(JSON.parse(retried.content).memory_id).toBe(saved.memory_id);
    const { body } = await call('/memory/list', { key });
    expect(body.memories).toEqual([
      expect.objectContaining({
        id: saved.memory_id,
        source: 'agent',
        importance: 0.7,
        content: 'The user is learning Portuguese.',
      }),
    ]);
  });

  it('is a tool error without a user, without the memory service, or with bad arguments', async () => {
    const args = JSON.stringify({ content: 'Something.', importance: 0.5 });
    expect(await runTool(saveMemoryTool, args, context(null))).toMatchObject({
      ok: false,
      content: expect.stringContaining('signed-in'),
    });
    expect(await runTool(saveMemoryTool, args, context('usr_x', false))).toMatchObject({
      ok: false,
      content: expect.stringContaining('not available'),
    });
    for (const bad of [
      { content: '', importance: 0.5 },
      { content: 'x'.repeat(1001), importance: 0.5 },
      { content: 'x', importance: 1.5 },
      { content: 'x' },
    ]) {
      expect((await runTool(saveMemoryTool, JSON.stringify(bad), context('usr_x'))).ok).toBe(false);
    }
    expect(saveMemoryTool.agentsOnly).toBe(true);
  });
});

describe('relevant memories for a chat message', () => {
  it('finds the memories sharing words with the message, best and most important first', async () => {
    const userId = `usr_relevant_${Date.now()}`;
    const vegetarian = await store.add(userId, 'The user is vegetarian and cooks Italian food.', 0.9, 'user');
    const kitchen = await store.add(userId, 'The user’s kitchen has no oven.', 0.3, 'user');
    const pasta = await store.add(userId, 'Favourite dinner: pasta with Italian tomato sauce.', 0.4, 'user');
    await store.add(userId, 'The user runs marathons.', 1, 'user');
    await store.add('usr_someone_else', 'The user loves Italian cooking and pasta dinners.', 1, 'user');

    const found = await store.relevant(userId, 'Can you suggest an Italian pasta recipe for dinner tonight?');
    expect(found.map((memory) => memory.id)).toEqual([pasta.id, vegetarian.id]);
    // Importance weighs in: of two memories matching the same word once, the more important comes first.
    const garden = await store.add(userId, 'The user has a kitchen garden.', 0.8, 'user');
    const kitchenFirst = await store.relevant(userId, 'Ideas for my kitchen?');
    expect(kitchenFirst.map((memory) => memory.id)).toEqual([garden.id, kitchen.id]);
    expect(await store.relevant(userId, 'Is it the one or the other?')).toEqual([]);
    expect(await store.relevant(userId, '!!! ???')).toEqual([]);
    expect(await store.relevant(userId, 'italian', 1)).toHaveLength(1);
  });

  it('builds an any-word query from a message, dropping punctuation and websearch syntax', () => {
    expect(anyWordQuery('Hello, "world" -not OR this!')).toBe('hello or world or not or this');
    expect(anyWordQuery('  ')).toBe('');
    expect(anyWordQuery('Café crème, 2 cups')).toBe('café or crème or 2 or cups');
  });
});
