/**
 * Regenerate, edit and branches through HTTP (docs/agent-service.md, "Regenerate, edit and branches"): a message sent
 * with `replaces_turn` stands in for that turn (a new answer to the same message, an edited message, or the message
 * asked of another agent); the earlier turn stays reachable as an alternative, `PUT /sessions/{id}/branch` shows it
 * again, and the history the model reads, the history page, the export and a share link all follow the branch the
 * conversation is on. A reopened chat's turns carry their agent, confidence and cost. Another user's session or turn
 * is a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';

let platform: TestPlatform;
let owner: string;
let stranger: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  owner = (await platform.createKey()).key;
  stranger = (await platform.createKey()).key;
}, 120_000);

afterAll(async () => {
  await platform?.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(path: string, key: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> {
  const response = await platform.agents(path, { ...init, key });
  return { status: response.status, body: (await response.json()) as Json };
}

/** A finished turn: its id. */
async function send(session: string, body: Json, key = owner): Promise<string> {
  const response = await platform.agents(`/chat/stream/${session}`, {
    method: 'POST',
    key,
    body: JSON.stringify({ preferred_agents: ['general'], ...body }),
  });
  expect(response.status).toBe(200);
  const turnId = response.headers.get('x-turn-id')!;
  const events = await readSse(response);
  expect(events.some((event) => (event.data as Json).type === 'cost')).toBe(true);
  return turnId;
}

/** What the model was sent on the last call: its user and assistant messages' texts. */
async function lastPrompt(): Promise<string[]> {
  const last = (await platform.simulator.requests()).last?.body as { messages: Json[] };
  return last.messages.filter((message) => message.role !== 'system').map((message) => String(message.content));
}

const history = async (session: string) => (await call(`/history/${session}`, owner)).body;
const userTexts = (page: Json) =>
  (page.messages as Json[]).filter((message) => message.role === 'user').map((message) => message.content);

describe('replaces_turn and branches', () => {
  it('regenerates an answer as an alternative, charged as a turn, and pages back to the first one', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Name a colour' });
    const second = await send(session, { message: 'Name a fruit' });
    const usageBefore = (await call(`/usage/${session}`, owner)).body;

    const again = await send(session, { message: 'Name a fruit', replaces_turn: second });
    // The model read turn 1 and the message again, not the answer it is replacing.
    expect(await lastPrompt()).toEqual(['Name a colour', expect.any(String), 'Name a fruit']);

    const page = await history(session);
    expect(userTexts(page)).toEqual(['Name a colour', 'Name a fruit']);
    const turns = page.turns as Json[];
    expect(turns.map((turn) => turn.turn_id)).toEqual([first, again]);
    expect(turns[1]!.alternatives).toEqual([second, again]);
    expect(turns[0]!.alternatives).toEqual([first]);
    // A reopened chat names the agent, how sure the router was, and what each turn cost.
    expect(turns[1]).toMatchObject({
      status: 'done',
      agent: { id: 'general', name: expect.any(String), confidence: 1, method: 'preferred', model: expect.any(String) },
      cost: { credits: expect.any(Number), input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
    });
    expect(turns[1]!.cost.credits).toBeGreaterThan(0);
    // Charged like any other turn.
    const usageAfter = (await call(`/usage/${session}`, owner)).body;
    expect(usageAfter.turns).toBe(usageBefore.turns + 1);
    expect(usageAfter.credits).toBeGreaterThan(usageBefore.credits);

    // Back to the first answer: the history, and the next message's context, follow it.
    const switched = await call(`/sessions/${session}/branch`, owner, {
      method: 'PUT',
      body: JSON.stringify({ turn_id: second }),
    });
    expect(switched).toEqual({ status: 200, body: { session_id: session, turn_id: second } });
    expect(((await history(session)).turns as Json[]).map((turn) => turn.turn_id)).toEqual([first, second]);
    await send(session, { message: 'And a vegetable?' });
    const prompt = await lastPrompt();
    expect(prompt.filter((_, index) => index % 2 === 0)).toEqual(['Name a colour', 'Name a fruit', 'And a vegetable?']);
    expect(prompt).toHaveLength(5);
  });

  it('edits a message into a new branch; history, export and share show the branch the person is on', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Plan a trip to Oslo' });
    await send(session, { message: 'What should I pack?' });

    const edited = await send(session, { message: 'Plan a trip to Lisbon', replaces_turn: first });
    expect(await lastPrompt()).toEqual(['Plan a trip to Lisbon']);
    const page = await history(session);
    expect(userTexts(page)).toEqual(['Plan a trip to Lisbon']);
    expect(page.message_count).toBe(2);
    expect((page.turns as Json[])[0]!.alternatives).toEqual([first, edited]);

    const exported = (await call(`/export/${session}?format=json`, owner)).body;
    expect((exported.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Lisbon',
    ]);
    const link = (await call(`/share/${session}`, owner, { method: 'POST', body: '{}' })).body;
    const token = new URL(link.url as string).pathname.split('/').pop();

    // Back on the first branch: the export follows, the link keeps showing what was shared.
    await call(`/sessions/${session}/branch`, owner, { method: 'PUT', body: JSON.stringify({ turn_id: first }) });
    expect(userTexts(await history(session))).toEqual(['Plan a trip to Oslo', 'What should I pack?']);
    const exportedAgain = (await call(`/export/${session}?format=json`, owner)).body;
    expect((exportedAgain.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Oslo',
      'What should I pack?',
    ]);
    const shared = await platform.agents(`/s/${token}`, { headers: { accept: 'application/json' } });
    const sharedView = (await shared.json()) as Json;
    expect((sharedView.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Lisbon',
    ]);
  });

  it('asks the same message of another agent', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Write a haiku about rain' });
    const other = await send(session, {
      message: 'Write a haiku about rain',
      replaces_turn: first,
      preferred_agents: ['writer'],
    });
    const turns = (await history(session)).turns as Json[];
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ turn_id: other, agent: { id: 'writer' }, alternatives: [first, other] });
  });

  it('refuses another user’s turn or session, a turn of another session, and bad ids, changing nothing', async () => {
    const session = `web:${randomUUID()}`;
    const turn = await send(session, { message: 'Hello there' });
    const otherSession = `web:${randomUUID()}`;
    await send(otherSession, { message: 'Another chat' });

    const post = (key: string, path: string, body: Json) =>
      call(path, key, { method: 'POST', body: JSON.stringify({ preferred_agents: ['general'], ...body }) });
    // The stranger's session of the same name holds no such turn.
    expect((await post(stranger, `/chat/stream/${session}`, { message: 'x', replaces_turn: turn })).status).toBe(404);
    expect((await post(owner, `/chat/stream/${otherSession}`, { message: 'x', replaces_turn: turn })).status).toBe(404);
    const bad = await post(owner, `/chat/stream/${session}`, { message: 'x', replaces_turn: 'turn-1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param ?? bad.body.error.message).toMatch(/replaces_turn/);

    const put = (key: string, path: string, body: Json) =>
      call(path, key, { method: 'PUT', body: JSON.stringify(body) });
    expect((await put(stranger, `/sessions/${session}/branch`, { turn_id: turn })).status).toBe(404);
    expect((await put(owner, `/sessions/${otherSession}/branch`, { turn_id: turn })).status).toBe(404);
    expect((await put(owner, `/sessions/${session}/branch`, { turn_id: 'nope' })).status).toBe(400);
    expect((await put(owner, `/sessions/${session}/branch`, {})).status).toBe(400);

    const page = await history(session);
    expect(userTexts(page)).toEqual(['Hello there']);
    expect((page.turns as Json[]).map((item) => item.alternatives)).toEqual([[turn]]);
  });
});
