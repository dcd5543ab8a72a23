/**
 * `POST /automation/trigger` and `GET /automation/agents` through HTTP (docs/webhooks.md, automation tools),
 * as Zapier's, Make's and n8n's webhook steps call them, with an API key in `X-API-Key`: a run that finishes within
 * AUTOMATION_SYNC_WAIT is answered at once (200 with its answer); a slower one 202 with the run, and its callback is
 * POSTed once when it ends, signed by Standard Webhooks with the account's callback secret (verified with the official
 * `standardwebhooks` library); without a callback URL the run is polled. An `Idempotency-Key` names the run, a
 * `session_id` continues a session; bad bodies, unknown agents and other users' agents are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor, workflowClosed } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * AUTOMATION_SYNC_WAIT here: long enough for a run with an instant upstream to end within it on a loaded machine (a
 * run is a workflow, an activity, a child turn and its steps: seconds under load, not milliseconds), while the slower
 * runs are made slower than it, whatever the machine's speed, by a model call that stalls before its first token for
 * longer than the wait (a stall, not a latency before the headers: the provider's connect timeout, 10 s, would end
 * that call and fail over to a model without the fault).
 */
const syncWaitMs = 10_000;
const slowerThanTheWait = { stall_after_tokens: 0, stall_ms: syncWaitMs + 5_000 };

let platform: TestPlatform;
let receiver: { server: Server; url: string; deliveries: Delivery[] };
let owner: { key: string; user_id: string };
let stranger: { key: string; user_id: string };

function startReceiver(): Promise<typeof receiver> {
  const deliveries: Delivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.push({ path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(204).end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, deliveries });
    });
  });
}

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startTestPlatform((simulatorUrl) => ({
    AUTOMATION_SYNC_WAIT: `${syncWaitMs}ms`,
    FETCH_ALLOWED_HOSTS: `${new URL(simulatorUrl).host},${new URL(receiver.url).host}`,
  }));
  owner = await platform.createKey();
  stranger = await platform.createKey();
}, 300_000);

afterAll(async () => {
  await platform?.close();
  await new Promise((resolve) => receiver?.server.close(resolve));
});

const json = async (response: Response): Promise<Json> => (await response.json()) as Json;

/** The run's view once it has ended (polled at its `status_url`, as a tool without a callback does). */
function ended(run: Json): Promise<Json> {
  return waitFor(
    `the run ${run.id as string} to end`,
    async () => {
      const view = await json(await platform.agents(run.status_url as string, { key: owner.key }));
      return (view.status === 'done' || view.status === 'failed') && view;
    },
    60_000,
  );
}

/** What an automation tool sends: the key in X-API-Key. */
function trigger(body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) {
  return fetch(`${platform.agentsUrl}/automation/trigger`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': options.key ?? owner.key,
      ...options.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('the automation service integration', () => {
  it('lists the agents a key can trigger', async () => {
    const response = await fetch(`${platform.agentsUrl}/automation/agents`, { headers: { 'x-api-key': owner.key } });
    expect(response.status).toBe(200);
    const { agents } = await json(response);
    expect(agents).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: 'general', name: expect.any(String), builtin: true })]),
    );
    expect((await fetch(`${platform.agentsUrl}/automation/agents`)).status).toBe(401);
    const wrong = await fetch(`${platform.agentsUrl}/automation/agents`, { headers: { 'x-api-key': 'te_nope' } });
    expect(wrong.status).toBe(401);
  });

  it('answers a run that finishes within the wait synchronously', async () => {
    const response = await trigger({ agent_id: 'general', message: 'Write one line about tea.' });
    expect(response.status).toBe(200);
    const run = await json(response);
    expect(run).toMatchObject({ source: 'automation', agent_id: 'general', status: 'done', duplicate: false });
    expect(run.answer).toEqual(expect.any(String));
    expect(run.id).toMatch(new RegExp(`^webhook-general-${owner.user_id}\\.`));
  }, 60_000);

  it('answers a slower run 202, and calls back once, signed with the account’s callback secret', async () => {
    await platform.simulator.addFault({ times: 1, fault: slowerThanTheWait });
    const response = await trigger({
      agent_id: 'general',
      message: 'Summarise the week.',
      callback_url: `${receiver.url}/zap/1`,
    });
    expect(response.status).toBe(202);
    const accepted = await json(response);
    expect(accepted).toMatchObject({ status: 'running', callback: 'pending' });

    const [delivery] = await waitFor(
      'the callback',
      async () => {
        const found = receiver.deliveries.filter((item) => item.path === '/zap/1');
        return found.length > 0 && found;
      },
      60_000,
    );
    const secret = ((await (await platform.fetch('/api/v1/media/callback-secret', { key: owner.key })).json()) as Json)
      .secret as string;
    const verified = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as Json;
    expect(delivery!.headers['webhook-id']).toBe(`msg_${accepted.id as string}`);
    expect(verified).toMatchObject({
      event: 'webhook.run.completed',
      run: { id: accepted.id, status: 'done', answer: expect.any(String) },
    });
    const run = await json(await platform.agents(`/webhook/runs/${accepted.id as string}`, { key: owner.key }));
    expect(run.callback).toMatchObject({ url: `${receiver.url}/zap/1`, status: 'delivered', attempts: 1 });
    // Once: the run's workflow, the only sender of its callback, has ended, and sent one.
    await workflowClosed(platform.environment.TEMPORAL_ADDRESS!, accepted.id as string);
    expect(receiver.deliveries.filter((item) => item.path === '/zap/1')).toHaveLength(1);
  }, 90_000);

  it('without a callback URL, a slower run is polled', async () => {
    await platform.simulator.addFault({ times: 1, fault: slowerThanTheWait });
    const response = await trigger({ agent_id: 'general', message: 'Plan a picnic.' });
    expect(response.status).toBe(202);
    const accepted = await json(response);
    expect(accepted.callback).toBe('none: poll status_url');
    const done = await ended(accepted);
    expect(done).toMatchObject({ id: accepted.id, status: 'done', answer: expect.any(String) });
  }, 90_000);

  it('takes an Idempotency-Key as the run’s name, and a session_id as the session to continue', async () => {
    const idempotencyKey = `zap-${randomUUID()}`;
    const send = () =>
      trigger(
        { agent_id: 'general', message: 'Remember: the code word is heron.', session_id: 'zap:daily-digest' },
        { headers: { 'idempotency-key': idempotencyKey } },
      );
    const first = await json(await send());
    expect(first).toMatchObject({ id: `webhook-general-${owner.user_id}.${idempotencyKey}`, duplicate: false });
    // The repeat is answered with the first run, whether that run has ended by now or not (how soon it ends is the
    // machine's doing): the same id, never a run of its own.
    const again = await json(await send());
    expect(again).toMatchObject({ id: first.id, duplicate: true });
    const done = await ended(first);
    expect(done).toMatchObject({ status: 'done', answer: expect.any(String) });
    for (const answered of [first, again]) {
      if (answered.status === 'done') expect(answered.answer).toBe(done.answer);
    }
    // Sent again once the run has ended: answered at once with its answer.
    const late = await send();
    expect(late.status).toBe(200);
    expect(await json(late)).toMatchObject({ id: first.id, duplicate: true, status: 'done', answer: done.answer });

    const next = await json(
      await trigger({ agent_id: 'general', message: 'What is the code word?', session_id: 'zap:daily-digest' }),
    );
    await ended(next);
    const history = await json(await platform.agents('/history/zap:daily-digest', { key: owner.key }));
    expect(history.messages.filter((message: Json) => message.role === 'user')).toHaveLength(2);
  }, 90_000);

  it('refuses bad bodies, unknown agents and other users’ agents, naming the field', async () => {
    const custom = await json(
      await platform.agents('/agents/custom', {
        method: 'POST',
        key: stranger.key,
        body: JSON.stringify({ name: 'Theirs', description: 'Not yours', system_prompt: 'Hello.' }),
      }),
    );
    const cases: Array<[unknown, number, string | undefined]> = [
      [{ message: 'hi' }, 400, 'agent_id'],
      [{ agent_id: 'general' }, 400, 'message'],
      [{ agent_id: 'general', message: 'hi', callback_url: 'ftp://example.com/x' }, 400, 'callback_url'],
      [{ agent_id: 'general', message: 'hi', session_id: 'has spaces' }, 400, 'session_id'],
      [{ agent_id: 'general', message: 'hi', extra: 1 }, 400, undefined],
      [{ agent_id: 'nobody', message: 'hi' }, 404, 'agent_id'],
      [{ agent_id: custom.id, message: 'hi' }, 404, 'agent_id'],
      ['{"agent_id": ', 400, undefined],
    ];
    for (const [body, status, param] of cases) {
      const response = await trigger(body);
      const error = (await json(response)).error;
      expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), status]);
      expect(error.type).toBe(status === 404 ? 'not_found' : 'invalid_request');
      if (param) expect(error.param).toBe(param);
    }
    const badKey = await trigger({ agent_id: 'general', message: 'hi' }, { headers: { 'idempotency-key': 'a b' } });
    expect(badKey.status).toBe(400);
    expect((await trigger({ agent_id: 'general', message: 'hi' }, { key: 'te_wrong' })).status).toBe(401);
  });
});
