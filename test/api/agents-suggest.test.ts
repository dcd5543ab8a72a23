/**
 * `POST /chat/suggest` on the agent service: follow-up questions for a message or a session's last exchange, from
 * the fast model through the gateway's completions (metered: the caller's credits go down), against the simulator.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let key: string;
let userId: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  const created = await platform.createKey();
  key = created.key;
  userId = created.user_id;
}, 300_000);

afterAll(async () => {
  await platform?.close();
});

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function suggest(body: unknown, apiKey: string | null = key) {
  const response = await platform.agents('/chat/suggest', {
    method: 'POST',
    body: JSON.stringify(body),
    ...(apiKey ? { key: apiKey } : {}),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

async function creditsUsed(): Promise<number> {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  expect(response.status).toBe(200);
  return ((await response.json()) as { credits_used: number }).credits_used;
}

/** The ledger settles a completion's charge as its workflow ends: wait for the balance to move. */
async function creditsUsedAbove(before: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const used = await creditsUsed();
    if (used > before) return used;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return creditsUsed();
}

describe('POST /chat/suggest', () => {
  it('suggests follow-up questions for a message, from the fast model, and charges the caller', async () => {
    const before = await creditsUsed();
    await platform.simulator.resetRequests();
    const { status, body } = await suggest({ message: 'How do I bake sourdough bread at home?', count: 2 });
    expect(status).toBe(200);
    expect(body).toEqual({
      suggestions: [
        'Simulated suggestions about: How do I bake sourdough bread (1)',
        'Simulated suggestions about: How do I bake sourdough bread (2)',
      ],
      model: 'gpt-4o-mini',
    });
    // The model was asked for exactly `count` suggestions with a JSON schema.
    const sent = (await platform.simulator.requests()).last?.body as Json;
    expect(sent.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { schema: { properties: { suggestions: { type: 'array', minItems: 2, maxItems: 2 } } } },
    });
    expect(await creditsUsedAbove(before)).toBeGreaterThan(before);
  });

  it('suggests from a session’s last exchange, three by default', async () => {
    const sessionId = `api:${randomUUID()}`;
    const chat = await platform.fetch('/api/v1/chat', {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'First question about gardens', session_id: sessionId }),
    });
    expect(chat.status).toBe(200);
    const second = await platform.fetch('/api/v1/chat', {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Which tomatoes grow best on a balcony?', session_id: sessionId }),
    });
    expect(second.status).toBe(200);
    await platform.simulator.resetRequests();
    const { status, body } = await suggest({ session_id: sessionId });
    expect(status).toBe(200);
    expect(body.suggestions).toEqual(
      [1, 2, 3].map((n) => `Simulated suggestions about: Which tomatoes grow best on a (${n})`),
    );
    // The assistant's answer went along as context.
    const sent = (await platform.simulator.requests()).last?.body as Json;
    expect(sent.messages.at(-1).content).toContain(
      'The assistant answered:\nSimulated reply from gpt-4o-mini-2024-07-18 to: Which tomatoes',
    );
  });

  it('does not read another user’s session, and refuses a bad body or no login', async () => {
    const stranger = await platform.createKey();
    const sessionId = `api:${randomUUID()}`;
    const chat = await platform.fetch('/api/v1/chat', {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Private question', session_id: sessionId }),
    });
    expect(chat.status).toBe(200);
    const other = await suggest({ session_id: sessionId }, stranger.key);
    expect(other.status).toBe(404);
    expect(other.body.error).toMatchObject({ type: 'not_found', param: 'session_id' });

    const empty = await suggest({});
    expect(empty.status).toBe(400);
    expect(empty.body.error.type).toBe('invalid_request');
    const tooMany = await suggest({ message: 'hi', count: 6 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ type: 'invalid_request', param: 'count' });
    const unknownField = await suggest({ message: 'hi', extra: true });
    expect(unknownField.status).toBe(400);

    const anonymous = await suggest({ message: 'hi' }, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.type).toBe('authentication_error');
  });
});
