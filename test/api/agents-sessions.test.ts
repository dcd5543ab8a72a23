/**
 * The agent service's session management through HTTP (docs/agent-service.md, history), what the
 * web app's chat list uses: `PATCH /sessions/{id}` renames a session (its own title instead of its first message;
 * null clears it), `DELETE /sessions/{id}` deletes it as the gateway's `DELETE /api/v1/sessions/{id}` does, refused
 * while a turn of it waits for an approval and done once the turn has ended. Another user's session is a 404 on both.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';
import { waitFor } from '../helpers/wait.ts';

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

type Json = Record<string, unknown>;

async function call(path: string, key: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> {
  const response = await platform.agents(path, { ...init, key });
  return { status: response.status, body: (await response.json()) as Json };
}

/** A finished chat turn in a new session; answers the session id. */
async function chat(message: string): Promise<string> {
  const session = `web:${randomUUID()}`;
  const response = await platform.agents(`/chat/stream/${session}`, {
    method: 'POST',
    key: owner,
    body: JSON.stringify({ message, preferred_agents: ['general'] }),
  });
  expect(response.status).toBe(200);
  const events = await readSse(response);
  expect(events.some((event) => (event.data as Json).type === 'cost')).toBe(true);
  return session;
}

const titleOf = async (session: string, key = owner) => {
  const listed = (await call('/sessions', key)).body.sessions as Array<{ session_id: string; title: string | null }>;
  return listed.find((item) => item.session_id === session)?.title;
};

describe('PATCH /sessions/{id}', () => {
  it('gives a session its own title, and null gives it back its first message', async () => {
    const session = await chat('Plan a trip to Kyoto in spring');
    expect(await titleOf(session)).toBe('Plan a trip to Kyoto in spring');

    const renamed = await call(`/sessions/${session}`, owner, {
      method: 'PATCH',
      body: JSON.stringify({ title: '  Kyoto trip  ' }),
    });
    expect(renamed).toEqual({ status: 200, body: { session_id: session, title: 'Kyoto trip' } });
    expect(await titleOf(session)).toBe('Kyoto trip');

    const cleared = await call(`/sessions/${session}`, owner, {
      method: 'PATCH',
      body: JSON.stringify({ title: null }),
    });
    expect(cleared.status).toBe(200);
    expect(await titleOf(session)).toBe('Plan a trip to Kyoto in spring');
  });

  it('refuses a bad title and changes nothing', async () => {
    const session = await chat('Summarise the news');
    for (const body of [{ title: '' }, { title: '   ' }, { title: 'x'.repeat(201) }, { title: 'ok', extra: 1 }, {}]) {
      const refused = await call(`/sessions/${session}`, owner, { method: 'PATCH', body: JSON.stringify(body) });
      expect(refused.status).toBe(400);
      expect((refused.body.error as Json).type).toBe('invalid_request');
    }
    expect(await titleOf(session)).toBe('Summarise the news');
  });

  it('answers 404 for another user’s session or one that does not exist', async () => {
    const session = await chat('Private thoughts');
    const foreign = await call(`/sessions/${session}`, stranger, {
      method: 'PATCH',
      body: JSON.stringify({ title: 'Mine now' }),
    });
    expect(foreign.status).toBe(404);
    expect(await titleOf(session)).toBe('Private thoughts');
    const missing = await call(`/sessions/web:${randomUUID()}`, owner, {
      method: 'PATCH',
      body: JSON.stringify({ title: 'x' }),
    });
    expect(missing.status).toBe(404);
  });
});

describe('DELETE /sessions/{id}', () => {
  it('deletes a session and its history; a second delete and another user’s delete are 404s', async () => {
    const session = await chat('Something to forget');
    const keep = await chat('Something to keep');
    expect((await call(`/sessions/${keep}`, stranger, { method: 'DELETE' })).status).toBe(404);
    expect((await call(`/history/${keep}`, owner)).status).toBe(200);

    expect(await call(`/sessions/${session}`, owner, { method: 'DELETE' })).toEqual({
      status: 200,
      body: { session_id: session, deleted: true },
    });
    expect((await call(`/history/${session}`, owner)).status).toBe(404);
    expect(await titleOf(session)).toBeUndefined();
    expect((await call(`/sessions/${session}`, owner, { method: 'DELETE' })).status).toBe(404);
    expect(await titleOf(keep)).toBe('Something to keep');
  });

  it('refuses while a turn of the session waits for an approval, and deletes once it has ended', async () => {
    const agent = await call('/agents/custom', owner, {
      method: 'POST',
      body: JSON.stringify({
        name: 'Publisher',
        description: 'Publishes small web pages',
        system_prompt: 'You publish web pages.',
        tools: ['publish_site'],
      }),
    });
    expect(agent.status).toBe(201);
    const session = `web:${randomUUID()}`;
    const args = { subdomain: `pending-${Date.now()}`, title: 'Pending', html: '<p>pending</p>' };
    const stream = await platform.agents(`/chat/stream/${session}`, {
      method: 'POST',
      key: owner,
      body: JSON.stringify({
        message: `Publish it [[call publish_site ${JSON.stringify(args)}]]`,
        preferred_agents: [agent.body.id],
      }),
    });
    expect(stream.status).toBe(200);
    const turnId = stream.headers.get('x-turn-id')!;
    const events = readSse(stream);
    const required = await waitFor('the approval request', async () => {
      const replay = await platform.agents(`/chat/turns/${turnId}/stream?after=-1`, { key: owner });
      const reader = replay.body!.getReader();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
        const match = /"type":"hitl_required","id":"([^"]+)"/.exec(text);
        if (match) {
          await reader.cancel();
          return match[1];
        }
      }
      return undefined;
    });

    const busy = await call(`/sessions/${session}`, owner, { method: 'DELETE' });
    expect(busy.status).toBe(409);
    expect((busy.body.error as Json).message).toContain('still running');
    expect((await call(`/history/${session}`, owner)).status).toBe(200);

    expect((await call(`/chat/approvals/${required}/reject`, owner, { method: 'POST', body: '{}' })).status).toBe(200);
    expect((await events).some((event) => (event.data as Json).type === 'cost')).toBe(true);
    await waitFor(
      'the deletion once the turn has ended',
      async () => (await call(`/sessions/${session}`, owner, { method: 'DELETE' })).status === 200,
    );
    expect((await call(`/history/${session}`, owner)).status).toBe(404);
  });
});
