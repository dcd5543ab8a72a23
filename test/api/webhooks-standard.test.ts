/**
 * `POST /webhook/{agent_id}` through HTTP (docs/webhooks.md): an owner creates a webhook for an agent and gets
 * its URL and secret once; deliveries signed by the test with the official `standardwebhooks` library wake the agent
 * (202 with the run at once; `GET /webhook/runs/{id}` has the answer, which also reaches the owner's linked Telegram
 * chat, once). A repeated `webhook-id` is the first run, never a second; forged, stale, future, unsigned, oversize
 * and malformed deliveries are refused with the documented error and store nothing; a rotated secret's predecessor
 * stays valid for its grace; the owner's plan limit answers 429; another user's webhooks and runs are 404s.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { newTelegramChat, simulatedMessengers } from '../helpers/messengers.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor, workflowClosed } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Client;
let owner: { key: string; user_id: string };
let stranger: { key: string; user_id: string };

beforeAll(async () => {
  platform = await startTestPlatform({ TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('hex') });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  owner = await platform.createKey();
  stranger = await platform.createKey();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const json = async (response: Response): Promise<Json> => (await response.json()) as Json;
const { sentTo, link } = simulatedMessengers(() => platform);

async function createWebhook(key: string, body: Json): Promise<Json> {
  const response = await platform.agents('/webhooks', { method: 'POST', key, body: JSON.stringify(body) });
  expect(response.status).toBe(201);
  return json(response);
}

/** A delivery to the webhook's URL, signed with `secret` (Standard Webhooks) unless `headers` say otherwise. */
async function deliver(
  webhook: Json,
  body: string,
  options: {
    secret?: string;
    id?: string;
    at?: Date;
    contentType?: string;
    headers?: Record<string, string>;
    url?: string;
  } = {},
): Promise<Response> {
  const id = options.id ?? `msg_${randomUUID()}`;
  const at = options.at ?? new Date();
  const signature = new Webhook(options.secret ?? (webhook.secret as string)).sign(id, at, body);
  return fetch(options.url ?? (webhook.url as string), {
    method: 'POST',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
      ...options.headers,
    },
    body,
  });
}

const runCount = async () =>
  Number((await database.query<{ count: string }>('select count(*) from webhook_runs')).rows[0]!.count);

async function finishedRun(runId: string, key = owner.key): Promise<Json> {
  return waitFor(
    `run ${runId} to finish`,
    async () => {
      const run = await json(await platform.agents(`/webhook/runs/${encodeURIComponent(runId)}`, { key }));
      return (run.status === 'done' || run.status === 'failed') && run;
    },
    90_000,
  );
}

describe('a standard webhook', () => {
  let webhook: Json;
  let chat: string;

  beforeAll(async () => {
    chat = newTelegramChat();
    await link('telegram', chat, { key: owner.key });
    webhook = await createWebhook(owner.key, { agent_id: 'general', forward_to_messengers: true });
  }, 120_000);

  it('is created with its URL and a secret shown once', async () => {
    expect(webhook.id).toMatch(/^whk_[A-Za-z0-9_-]{16}$/);
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(webhook.url).toBe(`${platform.agentsUrl}/webhook/general?hook=${webhook.id as string}`);
    expect(webhook).toMatchObject({ source: 'standard', agent_id: 'general', forward_to_messengers: true });
    const listed = await json(await platform.agents('/webhooks', { key: owner.key }));
    expect(listed.webhooks).toEqual([expect.objectContaining({ id: webhook.id, url: webhook.url })]);
    expect(JSON.stringify(listed)).not.toContain(webhook.secret as string);
    // Stored encrypted, never as sent.
    const { rows } = await database.query<{ secret: string }>('select secret from inbound_webhooks where id = $1', [
      webhook.id,
    ]);
    expect(rows[0]!.secret).not.toContain((webhook.secret as string).slice(6, 20));
  });

  it('wakes the agent with the JSON body, answers 202 at once, and forwards the answer once', async () => {
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({ event: 'order.created', order: { id: 42, total: '19.90 EUR' } });
    const response = await deliver(webhook, body, { id });
    expect(response.status).toBe(202);
    const accepted = await json(response);
    const runId = `webhook-general-${webhook.id as string}.${id}`;
    expect(accepted).toMatchObject({ run_id: runId, duplicate: false, status_url: `/webhook/runs/${runId}` });
    expect(['queued', 'running']).toContain(accepted.status);

    const run = await finishedRun(runId);
    expect(run).toMatchObject({ id: runId, source: 'standard', agent_id: 'general', status: 'done', error: null });
    expect(run.answer.length).toBeGreaterThan(0);
    // The agent read the body as its message.
    const history = await json(
      await platform.agents(`/history/${encodeURIComponent(run.session_id as string)}`, { key: owner.key }),
    );
    expect(history.messages.map((message: Json) => message.role)).toEqual(['user', 'assistant']);
    expect(history.messages[0].content).toBe(body);
    // The answer reached the linked Telegram chat (after the link's confirmation).
    const texts = await sentTo('telegram', chat, 2);
    expect(texts.slice(1)).toEqual([run.answer]);

    // The same delivery again (a sender's retry): the first run, nothing new.
    const again = await deliver(webhook, body, { id });
    expect(again.status).toBe(202);
    expect(await json(again)).toMatchObject({ run_id: runId, duplicate: true, status: 'done' });
    const turns = await database.query('select id from chat_turns where id like $1', [`chat-%`]);
    const sessionTurns = await database.query(
      `select t.id from chat_turns t join chat_sessions s on s.conversation_id = t.conversation_id where s.key = $1`,
      [run.session_id],
    );
    expect(sessionTurns.rowCount).toBe(1);
    expect(turns.rowCount).toBeGreaterThan(0);
    // Forwarded once: the run's workflow, the only sender of its answer, has ended (the repeat started none).
    await workflowClosed(platform.environment.TEMPORAL_ADDRESS!, runId);
    expect(await sentTo('telegram', chat, 0)).toHaveLength(2);
  }, 120_000);

  it('takes a text body as the message', async () => {
    const response = await deliver(webhook, 'The nightly build failed on main.', { contentType: 'text/plain' });
    expect(response.status).toBe(202);
    const run = await finishedRun((await json(response)).run_id as string);
    expect(run.status).toBe('done');
  }, 120_000);

  it('refuses forged, stale, future, unsigned and misaddressed deliveries with 401, storing nothing', async () => {
    const before = await runCount();
    const body = JSON.stringify({ hello: 'world' });
    const forged = await deliver(webhook, body, { secret: `whsec_${randomBytes(32).toString('base64')}` });
    expect(forged.status).toBe(401);
    expect(await json(forged)).toEqual({
      error: { type: 'authentication_error', message: expect.stringContaining('no signature') },
    });
    const stale = await deliver(webhook, body, { at: new Date(Date.now() - 6 * 60_000) });
    expect(stale.status).toBe(401);
    expect((await json(stale)).error.message).toContain('5 minutes');
    const future = await deliver(webhook, body, { at: new Date(Date.now() + 6 * 60_000) });
    expect(future.status).toBe(401);
    const tampered = await deliver(webhook, body, { headers: { 'webhook-id': `msg_${randomUUID()}` } });
    expect(tampered.status).toBe(401);
    const unsigned = await fetch(webhook.url as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(unsigned.status).toBe(401);
    expect((await json(unsigned)).error.type).toBe('authentication_error');
    // Right signature, wrong address: another agent's path, no ?hook=, an unknown hook.
    const otherAgent = await deliver(webhook, body, {
      url: (webhook.url as string).replace('/webhook/general', '/webhook/researcher'),
    });
    expect(otherAgent.status).toBe(401);
    const noHook = await deliver(webhook, body, { url: `${platform.agentsUrl}/webhook/general` });
    expect(noHook.status).toBe(401);
    const unknown = await deliver(webhook, body, {
      url: `${platform.agentsUrl}/webhook/general?hook=whk_${randomBytes(12).toString('base64url')}`,
    });
    expect(unknown.status).toBe(401);
    expect(await runCount()).toBe(before);
  });

  it('refuses oversize bodies (413), malformed JSON and bad text (400), storing nothing', async () => {
    const before = await runCount();
    const oversize = await deliver(webhook, JSON.stringify({ blob: 'x'.repeat(130 * 1024) }));
    expect(oversize.status).toBe(413);
    expect((await json(oversize)).error.type).toBe('payload_too_large');
    const tooLongMessage = await deliver(webhook, 'y'.repeat(40_000), { contentType: 'text/plain' });
    expect(tooLongMessage.status).toBe(413);
    const malformed = await deliver(webhook, '{"order": ');
    expect(malformed.status).toBe(400);
    expect(await json(malformed)).toEqual({ error: { type: 'invalid_request', message: 'The body is not JSON' } });
    const control = await deliver(webhook, JSON.stringify({ note: 'a\u0000b' }));
    expect(control.status).toBe(400);
    expect((await json(control)).error).toMatchObject({ type: 'invalid_request', param: 'note' });
    const empty = await deliver(webhook, '   ', { contentType: 'text/plain' });
    expect(empty.status).toBe(400);
    const badId = await deliver(webhook, '{}', { id: 'msg with spaces' });
    expect(badId.status).toBe(400);
    expect((await json(badId)).error.param).toBe('webhook-id');
    expect(await runCount()).toBe(before);
  });

  it('rotates its secret, the previous one accepted during its grace', async () => {
    const rotated = await json(
      await platform.agents(`/webhooks/${webhook.id as string}/rotate-secret`, { method: 'POST', key: owner.key }),
    );
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(webhook.secret);
    expect(Date.parse(rotated.previous_secret_valid_until as string) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    const withNew = await deliver(webhook, '{"n": 1}', { secret: rotated.secret as string });
    expect(withNew.status).toBe(202);
    const withOld = await deliver(webhook, '{"n": 2}');
    expect(withOld.status).toBe(202);
    await finishedRun((await json(withNew)).run_id as string);
    await finishedRun((await json(withOld)).run_id as string);
  }, 120_000);
});

describe('webhooks of other users, and their limits', () => {
  it('answers another user’s webhooks and runs as not found', async () => {
    const webhook = await createWebhook(owner.key, { agent_id: 'writer' });
    const delivered = await deliver(webhook, '{"topic": "spring"}');
    expect(delivered.status).toBe(202);
    const runId = (await json(delivered)).run_id as string;
    const key = stranger.key;
    for (const [method, path] of [
      ['GET', `/webhooks/${webhook.id as string}`],
      ['POST', `/webhooks/${webhook.id as string}/rotate-secret`],
      ['DELETE', `/webhooks/${webhook.id as string}`],
      ['GET', `/webhook/runs/${runId}`],
    ] as const) {
      const response = await platform.agents(path, { method, key });
      expect([method, path, response.status]).toEqual([method, path, 404]);
      expect((await json(response)).error.type).toBe('not_found');
    }
    expect((await json(await platform.agents('/webhooks', { key }))).webhooks).toEqual([]);
    // A stranger's custom agent cannot be named either.
    const custom = await platform.agents('/agents/custom', {
      method: 'POST',
      key,
      body: JSON.stringify({ name: 'Mine', description: 'Stranger’s agent', system_prompt: 'Be brief.' }),
    });
    const agentId = (await json(custom)).id as string;
    const refused = await platform.agents('/webhooks', {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ agent_id: agentId }),
    });
    expect(refused.status).toBe(404);
    expect((await json(refused)).error).toMatchObject({ type: 'not_found', param: 'agent_id' });
    // A custom agent of the owner's own can be woken.
    const mine = await json(
      await platform.agents('/agents/custom', {
        method: 'POST',
        key: owner.key,
        body: JSON.stringify({ name: 'Ops', description: 'Reads alerts', system_prompt: 'Summarise alerts.' }),
      }),
    );
    const customHook = await createWebhook(owner.key, { agent_id: mine.id });
    const woken = await deliver(customHook, '{"alert": "disk full"}');
    expect(woken.status).toBe(202);
    expect((await finishedRun((await json(woken)).run_id as string)).agent_id).toBe(mine.id);
    await finishedRun(runId);

    // Deleted: its URL is refused from then on.
    const deleted = await platform.agents(`/webhooks/${webhook.id as string}`, { method: 'DELETE', key: owner.key });
    expect(await json(deleted)).toEqual({ id: webhook.id, deleted: true });
    expect((await deliver(webhook, '{}')).status).toBe(401);
  }, 180_000);

  it('refuses bad webhook definitions naming the field', async () => {
    const cases: Array<[Json, string]> = [
      [{}, 'agent_id'],
      [{ agent_id: 'general', repository: 'a/b' }, 'repository'],
      [{ agent_id: 'general', source: 'github' }, 'repository'],
      [{ agent_id: 'general', source: 'github', repository: 'not a repo' }, 'repository'],
      [{ agent_id: 'general', surprise: true }, ''],
    ];
    for (const [body, param] of cases) {
      const response = await platform.agents('/webhooks', {
        method: 'POST',
        key: owner.key,
        body: JSON.stringify(body),
      });
      expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), 400]);
      const error = (await json(response)).error;
      expect(error.type).toBe('invalid_request');
      if (param) expect(error.param).toBe(param);
    }
    expect((await platform.agents('/webhooks', { method: 'POST', body: '{"agent_id":"general"}' })).status).toBe(401);
  });

  it('answers 429 past the owner’s plan limit, running nothing more', async () => {
    const limited = await platform.createKey(undefined, 'business');
    await database.query(`update users set custom_limits = '{"per_hour": 2}'::jsonb where id = $1`, [limited.user_id]);
    const webhook = await createWebhook(limited.key, { agent_id: 'general' });
    const first = await deliver(webhook, '{"n": 1}');
    const second = await deliver(webhook, '{"n": 2}');
    expect([first.status, second.status]).toEqual([202, 202]);
    const before = await runCount();
    const third = await deliver(webhook, '{"n": 3}');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await json(third)).error.type).toBe('rate_limit_exceeded');
    expect(await runCount()).toBe(before);
    // A repeated delivery is still answered with its run.
    const repeated = await deliver(webhook, '{"n": 1}', { id: (await json(first)).run_id.split('.').pop() });
    expect(repeated.status).toBe(202);
  }, 120_000);
});
