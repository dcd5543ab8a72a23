/**
 * A2A push notifications (docs/teams-and-a2a.md) through the official `@a2a-js/sdk` client:
 * a push config given with the message (`configuration.taskPushNotificationConfig`) or set on a task waiting for
 * approval (the push-config set method), the task run to completion, and its events received, in order, by a
 * node:http server on loopback (allowed by FETCH_ALLOWED_HOSTS), each signed `X-Tessera-Signature: sha256=<HMAC-SHA256
 * of the raw body keyed by the config's token>` (recomputed here). A callback URL at a private address is refused when
 * set (a JSON-RPC invalid-params error, v1.0 and v0.3), and nothing is stored or sent.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamResponse, TaskState, type Message } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { a2aClient, a2aUserMessage, asTask, opsAgentDefinition } from '../helpers/a2a.ts';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

interface Callback {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

let platform: TestPlatform;
let smtp: TestSmtp;
let receiver: Server;
let receiverBase: string;
const callbacks: Callback[] = [];
let key: string;
let opsAgent: string;
let client: Client;
let otherClient: Client;

/** The callback receiver: records every POST (path, headers, raw body) and answers 200. */
async function startReceiver(): Promise<Server> {
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    callbacks.push({ path: request.url ?? '', headers: request.headers, raw: Buffer.concat(chunks) });
    response.writeHead(200).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  receiver = await startReceiver();
  const host = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  receiverBase = `http://${host}`;
  platform = await startTestPlatform({ SMTP_URL: smtp.url, AGENT_APPROVAL_TIMEOUT: '30s', FETCH_ALLOWED_HOSTS: host });
  key = (await platform.createKey()).key;
  const otherKey = (await platform.createKey()).key;
  opsAgent = await createCustomAgent(platform, key, opsAgentDefinition);
  client = await a2aClient(platform.agentsUrl, key);
  otherClient = await a2aClient(platform.agentsUrl, otherKey);
}, 300_000);

afterAll(async () => {
  await platform?.close();
  await smtp?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const userMessage = (text: string, extra: Partial<Message> = {}) => a2aUserMessage(opsAgent, text, extra);

/** A push config for the receiver at `path`, with a fresh token. */
function pushConfig(path: string, url = `${receiverBase}${path}`) {
  return { tenant: '', id: '', taskId: '', url, token: randomBytes(16).toString('hex'), authentication: undefined };
}

/** The task states the callbacks at `path` carried, in arrival order, once one says completed; each signature checked. */
async function receivedStates(path: string, token: string, taskId: string): Promise<TaskState[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const states = callbacks.filter((callback) => callback.path === path).map((callback) => check(callback));
    if (states.includes(TaskState.TASK_STATE_COMPLETED) || Date.now() > deadline) {
      // Whatever was still in flight arrives too (and nothing after completed is expected).
      await sleep(500);
      return callbacks
        .filter((callback) => callback.path === path)
        .map((callback) => check(callback))
        .filter((state): state is TaskState => state !== null);
    }
    await sleep(100);
  }

  /** Verifies the callback's signature and token and reads its task state (null for an artifact chunk). */
  function check(callback: Callback): TaskState | null {
    const expected = `sha256=${createHmac('sha256', token).update(callback.raw).digest('hex')}`;
    expect(callback.headers['x-tessera-signature']).toBe(expected);
    expect(callback.headers['x-a2a-notification-token']).toBe(token);
    expect(callback.headers['content-type']).toMatch(/json/);
    const event = StreamResponse.fromJSON(JSON.parse(callback.raw.toString('utf8')));
    switch (event.payload?.$case) {
      case 'task':
        expect(event.payload.value.id).toBe(taskId);
        return event.payload.value.status?.state ?? null;
      case 'statusUpdate':
        expect(event.payload.value.taskId).toBe(taskId);
        return event.payload.value.status?.state ?? null;
      case 'artifactUpdate':
        expect(event.payload.value.taskId).toBe(taskId);
        return null;
      default:
        throw new Error(`unexpected push payload ${event.payload?.$case}`);
    }
  }
}

/** States in order, consecutive repeats folded: what a consumer sees the task go through. */
const fold = (states: TaskState[]) => states.filter((state, index) => state !== states[index - 1]);

describe('A2A push notifications', () => {
  it('a config sent with the message: every event of the task arrives signed, in order, working… completed', async () => {
    const config = pushConfig('/hook/with-message');
    const task = asTask(
      await client.sendMessage({
        tenant: '',
        message: userMessage(`Add ${call('calculator', { expression: '6 * 7' })}`),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: config,
          returnImmediately: false,
        },
        metadata: undefined,
      }),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const states = await receivedStates('/hook/with-message', config.token, task.id);
    expect(fold(states).slice(-2)).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    expect(states.filter((state) => state === TaskState.TASK_STATE_COMPLETED)).toHaveLength(1);
    // An artifact chunk (the answer's tokens) was pushed as well.
    expect(callbacks.filter((callback) => callback.path === '/hook/with-message').length).toBeGreaterThan(
      states.length,
    );

    // The config is the task's, listed to its owner; another user's key does not find the task.
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 10,
      pageToken: '',
    });
    expect(listed.configs).toEqual([expect.objectContaining({ url: config.url, taskId: task.id })]);
    await expect(
      otherClient.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 10, pageToken: '' }),
    ).rejects.toThrow(/not found/i);
  });

  it('a config set on a task waiting for approval: the rest of the task arrives, working… completed', async () => {
    const to = `push-${randomUUID()}@example.com`;
    const first = asTask(
      await client.sendMessage({
        tenant: '',
        message: userMessage(`Mail it ${call('send_email', { to, subject: 'Report', body: 'Done.' })}`),
        configuration: undefined,
        metadata: undefined,
      }),
    );
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    const config = { ...pushConfig('/hook/set-later'), taskId: first.id };
    await expect(otherClient.createTaskPushNotificationConfig(config)).rejects.toThrow(/not found/i);
    const saved = await client.createTaskPushNotificationConfig(config);
    expect(saved).toMatchObject({ taskId: first.id, url: config.url });
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: first.id, id: saved.id })).toMatchObject({
      url: config.url,
      token: config.token,
    });
    // Pushes go out in order after the response, loading the task's configs as each is sent: one of the task's
    // events so far may still be on its way when the config is saved. None of them may say more than the task did.
    const early = callbacks.filter((callback) => callback.path === '/hook/set-later');
    expect(early.map((callback) => callback.raw.toString('utf8')).join('\n')).not.toMatch(/COMPLETED/i);

    const resumed = asTask(
      await client.sendMessage({
        tenant: '',
        message: userMessage('approve', { taskId: first.id, contextId: first.contextId, metadata: undefined }),
        configuration: undefined,
        metadata: undefined,
      }),
    );
    expect(resumed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const states = await receivedStates('/hook/set-later', config.token, first.id);
    const folded = fold(states);
    expect(folded).toContain(TaskState.TASK_STATE_WORKING);
    expect(folded.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(folded.indexOf(TaskState.TASK_STATE_WORKING)).toBeLessThan(folded.indexOf(TaskState.TASK_STATE_COMPLETED));
    expect(smtp.received.filter((mail) => mail.to.includes(to))).toHaveLength(1);
  });

  it('refuses a callback URL at a private address when it is set (v1.0 and v0.3), storing and sending nothing', async () => {
    const before = callbacks.length;
    const privateUrl = 'http://10.0.0.9/hook';
    // With the message: the send is refused, and no task starts.
    await expect(
      client.sendMessage({
        tenant: '',
        message: userMessage('Hello'),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: pushConfig('', privateUrl),
          returnImmediately: false,
        },
        metadata: undefined,
      }),
    ).rejects.toThrow(/non-public|refused/i);

    // On an existing task: refused, and the task has no config.
    const task = asTask(
      await client.sendMessage({
        tenant: '',
        message: userMessage('Say hi'),
        configuration: undefined,
        metadata: undefined,
      }),
    );
    await expect(
      client.createTaskPushNotificationConfig({ ...pushConfig('', privateUrl), taskId: task.id }),
    ).rejects.toThrow(/non-public|refused/i);
    for (const url of ['http://127.0.0.1:9/hook', 'ftp://example.com/hook', 'http://user:pw@example.com/hook']) {
      await expect(
        client.createTaskPushNotificationConfig({ ...pushConfig('', url), taskId: task.id }),
      ).rejects.toThrow(/refused|not allowed/i);
    }
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 10,
      pageToken: '',
    });
    expect(listed.configs).toEqual([]);

    // The v0.3 method answers a JSON-RPC invalid-params error (HTTP 200).
    const response = await platform.agents('/a2a', {
      method: 'POST',
      key,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId: task.id, pushNotificationConfig: { url: privateUrl, token: 'secret' } },
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toMatch(/10\.0\.0\.9.*non-public/);
    expect(callbacks.length).toBe(before);
  });
});
