/**
 * Session chat through HTTP: whole turns with each built-in tool (the simulator's scripted model asks for the calls),
 * the SSE events in order, sessions, guest and keyed access, ordering of concurrent turns, deletion.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { chatStreamEvents, type ChatStreamEventName } from '../../common/chat-turn.ts';
import { callDirective as call } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse, type SseEvent } from '../helpers/sse.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let key: string;
let otherKey: string;
let database: pg.Pool;
let connection: Connection;

beforeAll(async () => {
  platform = await startTestPlatform({ CHAT_MAX_TOOL_ROUNDS: '3' });
  key = (await platform.createKey()).key;
  otherKey = (await platform.createKey()).key;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
});

afterAll(async () => {
  await connection?.close();
  await database?.end();
  await platform?.close();
});

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function chat(body: Record<string, unknown>, apiKey: string | null = key) {
  const response = await platform.fetch('/api/v1/chat', {
    method: 'POST',
    body: JSON.stringify(body),
    ...(apiKey ? { key: apiKey } : {}),
  });
  return { status: response.status, body: (await response.json()) as Json, headers: response.headers };
}

async function chatStream(body: Record<string, unknown>, apiKey: string | null = key): Promise<SseEvent[]> {
  const response = await platform.fetch('/api/v1/chat/stream', {
    method: 'POST',
    body: JSON.stringify(body),
    ...(apiKey ? { key: apiKey } : {}),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  return readSse(response);
}

async function session(id: string, apiKey: string | null = key) {
  const response = await platform.fetch(`/api/v1/sessions/${encodeURIComponent(id)}`, apiKey ? { key: apiKey } : {});
  return { status: response.status, body: (await response.json()) as Json };
}

const newSession = () => `api:${randomUUID()}`;

/** The local activities a turn's workflow ran, in order, read from its history's markers once it has ended. */
async function stepsOf(turnId: string): Promise<string[]> {
  const handle = new Client({ connection }).workflow.getHandle(turnId);
  // The answer reaches the client before the workflow task that recorded its steps completes.
  await handle.result();
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const payload = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0];
    if (!payload?.data) return [];
    return [(JSON.parse(Buffer.from(payload.data).toString('utf8')) as { activity_type: string }).activity_type];
  });
}

describe('a turn with a tool', () => {
  it('answers after running the calculator, and stores every message of the turn', async () => {
    const sessionId = newSession();
    const { status, body } = await chat({
      message: `What is 2 + 3 * 4? ${call('calculator', { expression: '2 + 3 * 4' })}`,
      session_id: sessionId,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      session_id: sessionId,
      model: 'gpt-4o-mini',
      tool_calls: [{ tool: 'calculator', ok: true }],
    });
    expect(body.response).toContain('14');
    expect(body.credits).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBeGreaterThan(0);

    const stored = await session(sessionId);
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ key: sessionId, message_count: 4 });
    expect(stored.body.messages.map((message: { role: string }) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(stored.body.messages.every((message: { channel: string }) => message.channel === 'api')).toBe(true);
    expect(stored.body.messages[2].content).toContain('14');
  });

  it('streams start, tool_start, tool_result, content and done in order, each payload as documented', async () => {
    const sessionId = newSession();
    const events = await chatStream({
      message: `Convert ${call('calculator', { expression: '5 km to m' })}`,
      session_id: sessionId,
      channel: 'web',
    });
    const names = events.map((event) => event.event);
    expect(names[0]).toBe('start');
    expect(names.slice(1, 3)).toEqual(['tool_start', 'tool_result']);
    expect(names.at(-1)).toBe('done');
    expect(names.slice(3, -1).every((name) => name === 'content')).toBe(true);
    expect(names.filter((name) => name === 'content').length).toBeGreaterThan(1);
    for (const event of events) {
      expect(chatStreamEvents[event.event as ChatStreamEventName].safeParse(event.data).success).toBe(true);
    }
    const ids = events.map((event) => Number(event.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(events[1]!.data).toMatchObject({ tool: 'calculator', arguments: { expression: '5 km to m' } });
    expect(events[2]!.data).toMatchObject({ tool: 'calculator', ok: true });
    expect(JSON.stringify(events[2]!.data)).toContain('5000');
    const text = events
      .filter((event) => event.event === 'content')
      .map((event) => (event.data as { delta: string }).delta)
      .join('');
    expect(text).toContain('5000');
    expect(events.at(-1)!.data).toMatchObject({ session_id: sessionId, model: 'gpt-4o-mini' });

    const stored = await session(sessionId);
    expect(stored.body.messages.every((message: { channel: string }) => message.channel === 'web')).toBe(true);
  });

  it('streams a reasoning model’s thinking before its tool call, and stores none of it', async () => {
    const sessionId = newSession();
    const events = await chatStream({
      message: `Think, then compute ${call('calculator', { expression: '6 * 7' })}`,
      session_id: sessionId,
      model: 'claude-haiku-4-5',
      reasoning_effort: 'low',
    });
    const names = events.map((event) => event.event);
    const thinking = events.filter((event) => event.event === 'thinking');
    expect(thinking.length).toBeGreaterThan(1);
    expect(names.lastIndexOf('thinking')).toBeLessThan(names.indexOf('tool_start'));
    // The round after the tool result goes without thinking: Anthropic would want this turn's signed blocks back.
    expect(names.slice(names.indexOf('tool_result') + 1, -1).every((name) => name === 'content')).toBe(true);
    for (const event of events) {
      expect(chatStreamEvents[event.event as ChatStreamEventName].safeParse(event.data).success).toBe(true);
    }
    const reasoning = thinking.map((event) => (event.data as { delta: string }).delta).join('');
    expect(reasoning).toMatch(/^Simulated reasoning of claude-haiku-4-5-\d+ about: Think, then compute/);

    const stored = await session(sessionId);
    expect(JSON.stringify(stored.body.messages)).not.toContain('Simulated reasoning');
  });

  it('resumes a finished stream after Last-Event-ID from the journal', async () => {
    const events = await chatStream({
      message: `Sum ${call('calculator', { expression: '1+1' })}`,
      session_id: newSession(),
    });
    const turnId = (events[0]!.data as { turn_id: string }).turn_id;
    const response = await platform.fetch(`/api/v1/chat/turns/${turnId}/stream`, {
      key,
      headers: { 'last-event-id': events[2]!.id! },
    });
    const resumed = await readSse(response);
    expect(resumed.map((event) => event.id)).toEqual(events.slice(3).map((event) => event.id));
    expect(resumed.map((event) => event.data)).toEqual(events.slice(3).map((event) => event.data));

    const stranger = await platform.fetch(`/api/v1/chat/turns/${turnId}/stream`, { key: otherKey });
    expect(stranger.status).toBe(404);
  });

  it.each([
    ['weather', { location: 'Tokyo' }, 'Tokyo'],
    ['web_search', { query: 'durable execution' }, 'durable execution'],
    ['web_fetch', { url: '$SIM/pages/article' }, 'Durable Execution'],
    ['calculator', { expression: 'sqrt(16) + 2^3' }, '12'],
  ])('runs %s in a whole turn', async (tool, args, expected) => {
    const resolved = JSON.parse(JSON.stringify(args).replace('$SIM', platform.simulatorUrl));
    const events = await chatStream({ message: call(tool, resolved), session_id: newSession() });
    const result = events.find((event) => event.event === 'tool_result');
    expect(result?.data).toMatchObject({ tool, ok: true });
    expect(JSON.stringify(result?.data)).toContain(expected);
    expect(events.at(-1)?.event).toBe('done');
  });

  it('sends a model arguments that fail validation back as a tool error, and the turn still answers', async () => {
    const events = await chatStream({ message: call('calculator', { expr: 7 }), session_id: newSession() });
    const result = events.find((event) => event.event === 'tool_result');
    expect(result?.data).toMatchObject({ tool: 'calculator', ok: false, error: expect.stringContaining('expression') });
    expect(events.at(-1)?.event).toBe('done');
  });

  it('answers a call to a tool that does not exist with a tool error', async () => {
    const events = await chatStream({ message: call('teleport', { to: 'mars' }), session_id: newSession() });
    expect(events.find((event) => event.event === 'tool_result')?.data).toMatchObject({
      tool: 'teleport',
      ok: false,
      error: expect.stringContaining('no tool named teleport'),
    });
  });

  it('stops offering tools after the configured number of rounds, then answers', async () => {
    const script = Array.from({ length: 5 }, (_, index) => call('calculator', { expression: `${index}+1` })).join(' ');
    const { status, body } = await chat({ message: script, session_id: newSession() });
    expect(status).toBe(200);
    expect(body.tool_calls).toHaveLength(3);
    expect(body.response).toMatch(/\S/);
  });
});

describe('each built-in tool in a whole turn', () => {
  /** One turn with one scripted call; the tool's result as the stream reported it. */
  async function turnWith(tool: string, args: unknown, sessionId = newSession()) {
    const events = await chatStream({ message: `Please. ${call(tool, args)}`, session_id: sessionId });
    expect(events.map((event) => event.event).at(-1)).toBe('done');
    const result = events.find((event) => event.event === 'tool_result');
    expect(result).toBeDefined();
    return result!.data as Json;
  }

  it('weather, web_search and web_fetch reach the simulator', async () => {
    const weather = await turnWith('weather', { location: 'Paris' });
    expect(weather).toMatchObject({ tool: 'weather', ok: true });
    expect(JSON.stringify(weather.result)).toContain('Paris');
    const search = await turnWith('web_search', { query: 'durable execution' });
    expect(search).toMatchObject({ tool: 'web_search', ok: true });
    expect(JSON.stringify(search.result)).toContain('durable execution');
    const page = await turnWith('web_fetch', { url: `${platform.simulatorUrl}/pages/article` });
    expect(page).toMatchObject({ tool: 'web_fetch', ok: true });
  });

  it("file_write, file_list, file_read and code_execute share the conversation's sandbox", async () => {
    const sessionId = newSession();
    expect(
      await turnWith('file_write', { path: 'notes/plan.md', content: '# Plan\nship it\n' }, sessionId),
    ).toMatchObject({ ok: true });
    const listed = await turnWith('file_list', { path: 'notes' }, sessionId);
    expect(JSON.stringify(listed.result)).toContain('plan.md');
    const read = await turnWith('file_read', { path: 'notes/plan.md' }, sessionId);
    expect(JSON.stringify(read.result)).toContain('ship it');
    const code = `const text = fs.readFile('notes/plan.md'); fs.writeFile('out.txt', text.toUpperCase()); text.length`;
    const ran = await turnWith('code_execute', { language: 'javascript', code }, sessionId);
    expect(ran).toMatchObject({ ok: true });
    expect(ran.result.result).toBe(15);
    expect(JSON.stringify(ran.result.files_written)).toContain('out.txt');
    const back = await turnWith('file_read', { path: 'out.txt' }, sessionId);
    expect(JSON.stringify(back.result)).toContain('SHIP IT');
    // Another conversation's sandbox is another directory.
    const elsewhere = await turnWith('file_read', { path: 'notes/plan.md' });
    expect(elsewhere.ok).toBe(false);
  });
});

describe('hostile tool calls end in a clear tool error, and nothing is reached or run', () => {
  async function toolError(tool: string, args: unknown): Promise<string> {
    const events = await chatStream({ message: `Try this. ${call(tool, args)}`, session_id: newSession() });
    expect(events.map((event) => event.event).at(-1)).toBe('done');
    const result = events.find((event) => event.event === 'tool_result')!.data as Json;
    expect(result.ok).toBe(false);
    return result.error as string;
  }

  it.each([
    ['loopback', 'http://127.0.0.1:1/'],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', 'http://[::1]/'],
    ['a name resolving to loopback', 'http://localhost/'],
    ['a private address', 'http://10.0.0.1/'],
    ['a scheme other than http(s)', 'file:///etc/passwd'],
  ])('web_fetch refuses %s', async (_label, url) => {
    expect(await toolError('web_fetch', { url })).toMatch(/refus|not allowed|not public|only http/i);
  });

  it('web_fetch refuses a redirect to a private address', async () => {
    const url = `${platform.simulatorUrl}/pages/redirect?to=${encodeURIComponent('http://192.168.1.1/admin')}`;
    expect(await toolError('web_fetch', { url })).toMatch(/refus|not allowed|not public/i);
  });

  it.each([
    ['an absolute path', '/etc/passwd'],
    ['a path leaving the sandbox', '../../../../etc/passwd'],
  ])('file_read refuses %s', async (_label, path) => {
    expect(await toolError('file_read', { path })).toMatch(/absolute|\.\.|outside|leave/i);
  });

  it("code_execute cannot read the host's files or reach the network", async () => {
    const read = await toolError('code_execute', { language: 'python', code: "open('/etc/passwd').read()" });
    expect(read).not.toContain('root:');
    const network = await toolError('code_execute', {
      language: 'python',
      code: "import urllib.request\nurllib.request.urlopen('http://example.com').read()",
    });
    expect(network).toMatch(/error|not|denied|unavailable/i);
  });

  it('code_execute stops an endless loop at its CPU limit', async () => {
    // On a busy machine the 15 s of wall clock may come before the 10 s of CPU: stopped by the limit it reached,
    // counted from when the code started (never the runner's start-up), and named. A wall-clock stop says how much CPU
    // the code had, under its 10 s (code past them is reported as stopped by the CPU limit).
    const error = await toolError('code_execute', { language: 'javascript', code: 'while (true) {}' });
    const stopped =
      /the code used more than 10 s of CPU time and was stopped|the code did not finish within 15 s and was stopped \(it had used (\d+\.\d) s of CPU time\)/.exec(
        error,
      );
    expect(stopped ? 'stopped at a limit' : error).toBe('stopped at a limit');
    if (stopped![1] !== undefined) expect(Number(stopped![1])).toBeLessThanOrEqual(10);
  });
});

describe('sessions', () => {
  it('continues a session: the second turn sees the first', async () => {
    const sessionId = newSession();
    await chat({ message: 'My name is Ada.', session_id: sessionId });
    await platform.simulator.resetRequests();
    const second = await chat({ message: 'What is my name?', session_id: sessionId });
    const last = (await platform.simulator.requests()).last;
    const sent = JSON.stringify(last?.body);
    expect(sent).toContain('My name is Ada.');
    expect(sent).toContain('What is my name?');
    // The first turn had ended: the second read its history in its opening, and its workflow is one step, the model
    // call, which closed the turn with its answer (no first step, no close of its own).
    expect(await stepsOf(second.headers.get('x-turn-id')!)).toEqual(['callProvider']);
    // Where the API's time went, by stage, as the completions endpoint reports it.
    const stages = (second.headers.get('server-timing') ?? '').split(', ').map((entry) => entry.split(';')[0]);
    expect(stages).toEqual(['receive', 'auth', 'plan', 'open', 'start', 'model', 'turn']);
  });

  it('waits for a turn still running before reading the history, and sees its answer', async () => {
    const sessionId = newSession();
    await platform.simulator.resetRequests();
    // Long enough that the second message opens while the first waits, even on a busy machine.
    await platform.simulator.addFault({ times: 1, fault: { latency_ms: 4_000 } });
    const first = chat({ message: 'A slow question.', session_id: sessionId });
    // The second message is sent once the first turn's model call is under way.
    await waitFor('the first turn at the provider', async () => (await platform.simulator.requests()).total >= 1);
    const second = await chat({ message: 'And a quick one.', session_id: sessionId });
    expect((await first).status).toBe(200);
    expect(second.status).toBe(200);
    const sent = JSON.stringify((await platform.simulator.requests()).last?.body);
    expect(sent).toContain('A slow question.');
    expect(sent).toContain('Simulated reply');
    expect(await stepsOf(second.headers.get('x-turn-id')!)).toEqual(['beginTurn', 'callProvider']);
  });

  it('answers two messages sent at once in order, the second seeing the first', async () => {
    const sessionId = newSession();
    await chat({ message: 'warm up', session_id: sessionId });
    const [first, second] = await Promise.all([
      chat({ message: 'first of two', session_id: sessionId }),
      new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
        chat({ message: 'second of two', session_id: sessionId }),
      ),
    ]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const stored = await session(sessionId);
    expect(stored.body.messages.map((message: { content: string }) => message.content)).toEqual([
      'warm up',
      expect.stringContaining('warm up'),
      'first of two',
      expect.stringContaining('first of two'),
      'second of two',
      expect.stringContaining('second of two'),
    ]);
  });

  it('lists the caller’s sessions with channels, message counts and activity', async () => {
    const sessionId = newSession();
    await chat({ message: 'listed', session_id: sessionId, channel: 'web' });
    const response = await platform.fetch('/api/v1/sessions', { key });
    const body = (await response.json()) as { data: Array<Record<string, unknown>> };
    const listed = body.data.find((item) => item.key === sessionId);
    expect(listed).toMatchObject({ key: sessionId, channels: ['web'], message_count: 2 });
    expect(typeof listed?.last_activity).toBe('string');
    const others = (await (await platform.fetch('/api/v1/sessions', { key: otherKey })).json()) as {
      data: Array<{ key: string }>;
    };
    expect(others.data.some((item) => item.key === sessionId)).toBe(false);
  });

  it('never shows another user’s session: reading is a 404, writing opens the caller’s own', async () => {
    const sessionId = newSession();
    await chat({ message: 'a secret for the owner only', session_id: sessionId });
    expect((await session(sessionId, otherKey)).status).toBe(404);
    const { body } = await chat({ message: 'hello', session_id: sessionId }, otherKey);
    expect(body.session_id).toBe(sessionId);
    const theirs = await session(sessionId, otherKey);
    expect(JSON.stringify(theirs.body)).not.toContain('secret');
    expect((await session(sessionId)).body.message_count).toBe(2);
  });

  it('deletes a session and its history for good, journal included', async () => {
    const sessionId = newSession();
    const events = await chatStream({ message: 'to be forgotten', session_id: sessionId });
    const turnId = (events[0]!.data as { turn_id: string }).turn_id;
    const deleted = await platform.fetch(`/api/v1/sessions/${sessionId}`, { method: 'DELETE', key });
    expect(deleted.status).toBe(200);
    expect((await session(sessionId)).status).toBe(404);
    const rows = await database.query('select count(*)::int as n from stream_chunks where request_id = $1', [turnId]);
    expect(rows.rows[0].n).toBe(0);
    const messages = await database.query(
      `select count(*)::int as n from chat_messages where content = 'to be forgotten'`,
    );
    expect(messages.rows[0].n).toBe(0);
    expect((await platform.fetch(`/api/v1/sessions/${sessionId}`, { method: 'DELETE', key })).status).toBe(404);
  });
});

describe('guests', () => {
  const guestSession = () => `web:${randomUUID()}`;

  it('chat without a key when a session id is sent, on a free-plan model', async () => {
    const sessionId = guestSession();
    const { status, body, headers } = await chat({ message: 'hello as a guest', session_id: sessionId }, null);
    expect(status).toBe(200);
    expect(body).toMatchObject({ session_id: sessionId, model: 'gpt-4o-mini', credits: 0 });
    expect(headers.get('x-ratelimit-limit-hour')).toBe('30');
    expect((await session(sessionId, null)).body.message_count).toBe(2);
  });

  it('refuses a guest without a session id, with a guessable one, or asking for a paid model', async () => {
    const missing = await chat({ message: 'hi' }, null);
    expect(missing.status).toBe(401);
    expect(missing.body.error.type).toBe('authentication_error');
    const short = await chat({ message: 'hi', session_id: 'api:default' }, null);
    expect(short.status).toBe(400);
    expect(short.body.error).toMatchObject({ type: 'invalid_request', param: 'session_id' });
    const paid = await chat({ message: 'hi', session_id: guestSession(), model: 'claude-opus-4-5' }, null);
    expect(paid.status).toBe(403);
    expect(paid.body.error.type).toBe('permission_denied');
    expect((await platform.fetch('/api/v1/sessions')).status).toBe(401);
  });

  it('keeps guests and keyed users apart', async () => {
    const sessionId = guestSession();
    await chat({ message: 'keyed user secret', session_id: sessionId });
    expect((await session(sessionId, null)).status).toBe(404);
    await chat({ message: 'guest words', session_id: sessionId }, null);
    expect(JSON.stringify((await session(sessionId, null)).body)).not.toContain('keyed user secret');
    expect(JSON.stringify((await session(sessionId)).body)).not.toContain('guest words');
  });
});

describe('bad input changes nothing', () => {
  it.each([
    ['an empty message', { message: '' }, 'message'],
    ['a message over 32,000 characters', { message: 'x'.repeat(32_001) }, 'message'],
    ['a channel only webhooks use', { message: 'hi', channel: 'line' }, 'channel'],
    ['a session id with spaces', { message: 'hi', session_id: 'has spaces in it' }, 'session_id'],
    ['an unknown field', { message: 'hi', extra: true }, ''],
  ])('400 for %s', async (_label, body, param) => {
    const before = await database.query('select count(*)::int as n from chat_messages');
    const { status, body: answer } = await chat(body);
    expect(status).toBe(400);
    expect(answer.error.type).toBe('invalid_request');
    if (param) expect(answer.error.param).toBe(param);
    const after = await database.query('select count(*)::int as n from chat_messages');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('404 for an unknown model, with nothing stored', async () => {
    const sessionId = newSession();
    const { status, body } = await chat({ message: 'hi', session_id: sessionId, model: 'no-such-model' });
    expect(status).toBe(404);
    expect(body.error.type).toBe('model_not_found');
    expect((await session(sessionId)).status).toBe(404);
  });
});

describe('integrations', () => {
  it('lists every built-in tool with its JSON schema and whether it is configured', async () => {
    const response = await platform.fetch('/api/v1/integrations');
    const body = (await response.json()) as { tools: Json[]; active: string[] };
    const names = body.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['calculator', 'weather', 'web_search', 'web_fetch']));
    const calculator = body.tools.find((tool) => tool.name === 'calculator');
    expect(calculator).toMatchObject({ configured: true, parameters: { type: 'object' } });
    expect(calculator?.parameters.properties.expression).toBeDefined();
    expect(body.active).toEqual(expect.arrayContaining(['calculator', 'weather', 'web_search']));
  });
});
