/**
 * The agent service's A2A server (spec 4.7) through HTTP with the official `@a2a-js/sdk` client: the card, send,
 * stream, get, cancel, resubscribe, input-required then resumed by the next message (a real SMTP server receives the
 * approved mail), another user's task, the v0.3 JSON-RPC methods and the spec's `/a2a/tasks/send` alias, and hostile
 * input (unknown method, oversize parts, no key).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  type AgentExecutor,
} from '@a2a-js/sdk/server';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { a2aClient, a2aUserMessage, asTask, opsAgentDefinition } from '../helpers/a2a.ts';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import { waitFor } from '../helpers/wait.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let smtp: TestSmtp;
let key: string;
let otherKey: string;
let opsAgent: string;
let client: Client;
let otherClient: Client;
let remote: Server;
let remoteUrl: string;
let delegator: string;

/** An A2A agent on the SDK's own server pieces (node:http, loopback): it answers "echo: <text>" as an artifact. */
async function startRemoteAgent(): Promise<Server> {
  const executor: AgentExecutor = {
    execute: async (request, bus) => {
      const { taskId, contextId } = request;
      const text = request.userMessage.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''));
      const status = (state: TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [request.userMessage],
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(TaskState.TASK_STATE_WORKING),
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'echo',
            name: 'echo',
            description: '',
            parts: [
              {
                content: { $case: 'text', value: `echo: ${text.join('')}` },
                metadata: undefined,
                filename: '',
                mediaType: 'text/plain',
              },
            ],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(TaskState.TASK_STATE_COMPLETED),
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    cancelTask: async () => {},
  };
  let base = '';
  const card = () => ({
    name: 'Echo',
    description: 'Echoes',
    supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  });
  const server = createServer(async (request, response) => {
    if (request.method === 'GET') {
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(card()));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card(), tasks, executor));
    const answer = await transport.handle(Buffer.concat(chunks).toString(), new ServerCallContext({}));
    if (typeof (answer as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for await (const event of answer as AsyncGenerator) response.write(`data: ${JSON.stringify(event)}\n\n`);
      response.end();
    } else {
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    }
  });
  const tasks = new InMemoryTaskStore();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return server;
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  remote = await startRemoteAgent();
  const remoteHost = `127.0.0.1:${(remote.address() as AddressInfo).port}`;
  remoteUrl = `http://${remoteHost}/.well-known/agent-card.json`;
  platform = await startTestPlatform({
    SMTP_URL: smtp.url,
    AGENT_APPROVAL_TIMEOUT: '30s',
    FETCH_ALLOWED_HOSTS: remoteHost,
    A2A_REMOTE_AGENTS: `echo=${remoteUrl}`,
  });
  key = (await platform.createKey()).key;
  otherKey = (await platform.createKey()).key;
  opsAgent = await createCustomAgent(platform, key, opsAgentDefinition);
  delegator = await createCustomAgent(platform, key, {
    name: 'Delegator',
    description: 'Hands work to remote agents',
    system_prompt: 'You delegate.',
    tools: ['delegate_to_agent'],
  });
  client = await a2aClient(platform.agentsUrl, key);
  otherClient = await a2aClient(platform.agentsUrl, otherKey);
});

afterAll(async () => {
  await platform?.close();
  await smtp?.close();
  await new Promise((resolve) => remote?.close(resolve));
});

const userMessage = (text: string, extra: Partial<Message> = {}) => a2aUserMessage(opsAgent, text, extra);

const send = (message: Message, on: Client = client) =>
  on.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined });

const artifactText = (task: Task) =>
  task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');

async function rpc(body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return platform.agents('/a2a', { method: 'POST', key, body: JSON.stringify(body), headers });
}

/** A v0.3 JSON-RPC `message/send` with one text part (and `metadata` when given). */
const v03MessageSend = (id: number, text: string, metadata?: Json) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: {
    message: {
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'text', text }],
      ...(metadata ? { metadata } : {}),
    },
  },
});

describe('agent card', () => {
  it('is public and declares the JSON-RPC interface, streaming, push, the API key and one skill per public agent', async () => {
    const response = await platform.agents('/.well-known/agent-card.json', { method: 'GET' });
    expect(response.status).toBe(200);
    const card = (await response.json()) as Json;
    expect(card.supportedInterfaces).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          url: `${platform.agentsUrl}/a2a`,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
        }),
        expect.objectContaining({ protocolBinding: 'JSONRPC', protocolVersion: '0.3' }),
      ]),
    );
    expect(card.url).toBe(`${platform.agentsUrl}/a2a`);
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
    expect(Object.keys(card.securitySchemes)).toEqual(['bearer', 'apiKey']);
    const agents = (await (await platform.agents('/agents', { method: 'GET', key })).json()) as Json;
    const builtIn = (agents.agents ?? agents).filter((agent: Json) => agent.builtin !== false);
    expect(card.skills.length).toBeGreaterThan(0);
    expect(card.skills.map((skill: Json) => skill.id)).not.toContain(opsAgent);
    expect(card.skills.length).toBeLessThanOrEqual(builtIn.length);
  });
});

describe('the SDK client against our server', () => {
  it('sends a message: the task completes with the answer as an artifact, and tasks/get returns it', async () => {
    const task = asTask(await send(userMessage(`Add these ${call('calculator', { expression: '40 + 2' })}`)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task).length).toBeGreaterThan(0);
    const fetched = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(fetched)).toBe(artifactText(task));
    // Another user's key: not found.
    await expect(otherClient.getTask({ tenant: '', id: task.id, historyLength: undefined })).rejects.toThrow(
      /not found/i,
    );
    // The task is a workflow the Temporal UI finds by kind.
    const connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
    try {
      const description = await new TemporalClient({ connection }).workflow.getHandle(`a2a-task-${task.id}`).describe();
      expect(description.searchAttributes).toMatchObject({ TesseraKind: ['a2a-task'] });
    } finally {
      await connection.close();
    }
  });

  it('streams the task: submitted, working, artifact chunks, completed', async () => {
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream({
      tenant: '',
      message: userMessage('Say something short'),
      configuration: undefined,
      metadata: undefined,
    })) {
      events.push(event);
    }
    const cases = events.map((event) => event.payload?.$case);
    expect(cases[0]).toBe('task');
    expect(cases).toContain('artifactUpdate');
    const states = events.flatMap((event) =>
      event.payload?.$case === 'statusUpdate' ? [event.payload.value.status?.state] : [],
    );
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('pauses for approval (input-required), resubscribes, and resumes with the next message on the task', async () => {
    const to = `a2a-${randomUUID()}@example.com`;
    const first = asTask(
      await send(userMessage(`Mail it ${call('send_email', { to, subject: 'Report', body: 'All done.' })}`)),
    );
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const prompt = first.status?.message?.parts[0]?.content;
    expect(prompt?.$case === 'text' && prompt.value).toMatch(/send_email.*approve/s);
    expect(smtp.received.filter((mail) => mail.to.includes(to))).toHaveLength(0);

    const seenSoFar: StreamResponse[] = [];
    const resubscribed = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: first.id })) seenSoFar.push(event);
      return seenSoFar;
    })();
    // Subscribed once the stream opens with the task as it stands (the protocol's first event).
    await waitFor('the resubscribed stream’s first event', async () => seenSoFar.length > 0);

    const resumed = asTask(
      await send(userMessage('approve', { taskId: first.id, contextId: first.contextId, metadata: undefined })),
    );
    expect(resumed.id).toBe(first.id);
    expect(resumed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(smtp.received.filter((mail) => mail.to.includes(to))).toHaveLength(1);
    const seen = await resubscribed;
    expect(seen.length).toBeGreaterThan(0);
    const last = seen.at(-1)!;
    expect(last.payload?.$case === 'statusUpdate' && last.payload.value.status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
  });

  it('cancels a task waiting for approval: canceled, and the mail never goes', async () => {
    const to = `a2a-${randomUUID()}@example.com`;
    const task = asTask(await send(userMessage(`Mail ${call('send_email', { to, subject: 'X', body: 'Y' })}`)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await expect(otherClient.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(
      /not found/i,
    );
    const cancelled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const fetched = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(fetched.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(smtp.received.filter((mail) => mail.to.includes(to))).toHaveLength(0);
  });
});

describe('v0.3 JSON-RPC and the /a2a/tasks/send alias', () => {
  it('answers message/send and tasks/get in v0.3 shapes', async () => {
    const response = await rpc(v03MessageSend(1, 'Hello there', { agent_id: opsAgent }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const got = (await (
      await rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: body.result.id } })
    ).json()) as Json;
    expect(got.result).toMatchObject({ id: body.result.id, status: { state: 'completed' } });
  });

  it('keeps the spec path: POST /a2a/tasks/send returns the task with status and artifacts (X-API-Key works)', async () => {
    const response = await platform.agents('/a2a/tasks/send', {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: JSON.stringify({
        id: randomUUID(),
        sessionId: randomUUID(),
        message: { role: 'user', parts: [{ type: 'text', text: 'Hello' }] },
        metadata: { agent_id: opsAgent },
      }),
    });
    expect(response.status).toBe(200);
    const task = (await response.json()) as Json;
    expect(task.status.state).toBe('completed');
    expect(task.artifacts[0].parts[0].text.length).toBeGreaterThan(0);
  });
});

describe('hostile input', () => {
  it('an unknown method is JSON-RPC -32601', async () => {
    const response = await rpc({ jsonrpc: '2.0', id: 7, method: 'tasks/explode', params: {} });
    expect(response.status).toBe(200);
    expect(((await response.json()) as Json).error.code).toBe(-32601);
  });

  it('an oversize part is a JSON-RPC invalid-params error, not a 500', async () => {
    const response = await rpc(v03MessageSend(8, 'x'.repeat(40_000)));
    expect(response.status).toBe(200);
    expect(((await response.json()) as Json).error.code).toBe(-32602);
  });

  it('no key is a 401', async () => {
    const response = await platform.agents('/a2a', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
    });
    expect(response.status).toBe(401);
  });
});

describe('delegation out (delegate_to_agent)', () => {
  async function chatTurn(message: string): Promise<Json[]> {
    const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message, preferred_agents: [delegator] }),
    });
    expect(response.status).toBe(200);
    return (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as Json);
  }

  it('calls the configured remote agent with the SDK client and gets its answer', async () => {
    const events = await chatTurn(`Ask echo ${call('delegate_to_agent', { agent: 'echo', message: 'ping 42' })}`);
    const done = events.find((event) => event.type === 'tool' && event.status === 'done');
    expect(done).toMatchObject({
      tool: 'delegate_to_agent',
      ok: true,
      result: { state: 'completed', answer: 'echo: ping 42' },
    });
    // The remote agent's progress reached the caller's stream, between the call and its result.
    const kinds = events
      .filter((event) => event.type === 'tool' || event.type === 'tool_progress')
      .map((event) => (event.type === 'tool' ? event.status : 'progress'));
    expect(kinds[0]).toBe('calling');
    expect(kinds.at(-1)).toBe('done');
    const progress = events.filter((event) => event.type === 'tool_progress');
    expect(progress[0]).toMatchObject({ tool: 'delegate_to_agent', detail: { remote_task: expect.any(String) } });
    expect(progress.map((event) => event.text ?? '').join('')).toContain('echo: ping 42');
  });

  it('refuses a card URL at a private address', async () => {
    const events = await chatTurn(
      `Ask ${call('delegate_to_agent', { agent_card_url: 'http://10.0.0.7/.well-known/agent-card.json', message: 'hi' })}`,
    );
    const done = events.find((event) => event.type === 'tool' && event.status === 'done');
    expect(done).toMatchObject({ tool: 'delegate_to_agent', ok: false });
    expect(String(done!.result)).toMatch(/non-public|refused/i);
  });
});
