/**
 * The agent service's external API (spec 4.11): keys generated, listed masked and revoked by a logged-in user, then
 * used as `X-API-Key` on `/api/v1/*` (chat in the agent stream's format, the agent list); a bad, missing or revoked
 * key is a 401 in the standard error envelope.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let owner: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  owner = (await platform.createKey()).key;
});

afterAll(async () => {
  await platform?.close();
});

const chat = (headers: Record<string, string>) =>
  platform.agents('/api/v1/chat', {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: 'Hello from an app', session_id: `app:${randomUUID()}`, agent_id: 'general' }),
  });

it('generates a key, lists it masked, serves /api/v1 with it, and refuses it once revoked', async () => {
  const created = await platform.agents('/api/keys', {
    method: 'POST',
    key: owner,
    body: JSON.stringify({ name: 'app' }),
  });
  expect(created.status).toBe(201);
  const key = (await created.json()) as Json;
  expect(key.key).toMatch(/^te_/);

  const listed = (await (await platform.agents('/api/keys', { key: owner })).json()) as Json;
  const entry = listed.keys.find((item: Json) => item.id === key.id);
  expect(entry.key_preview).not.toBe(key.key);
  expect(JSON.stringify(listed)).not.toContain(key.key);

  const agents = await platform.agents('/api/v1/agents', { headers: { 'x-api-key': key.key } });
  expect(agents.status).toBe(200);

  const answer = await chat({ 'x-api-key': key.key });
  expect(answer.status).toBe(200);
  const text = await answer.text();
  expect(text).toContain('"type":"routed"');
  expect(text).toContain('"type":"cost"');
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);

  const revoked = await platform.agents(`/api/keys/${key.id}`, { method: 'DELETE', key: owner });
  expect(revoked.status).toBe(200);
  const refused = await chat({ 'x-api-key': key.key });
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as Json).error.type).toBe('authentication_error');
  expect((await platform.agents(`/api/keys/${key.id}`, { method: 'DELETE', key: owner })).status).toBe(404);
});

it('answers 401 in the error envelope without a key or with a bad one', async () => {
  const attempts: Array<Record<string, string>> = [
    {},
    { 'x-api-key': 'te_not_a_real_key_at_all_000000' },
    { 'x-api-key': 'garbage' },
  ];
  for (const headers of attempts) {
    const response = await chat(headers);
    expect(response.status).toBe(401);
    const body = (await response.json()) as Json;
    expect(body.error).toMatchObject({ type: 'authentication_error', message: expect.any(String) });
  }
});
