/**
 * An agent loop survives its worker: SIGKILL the whole platform (`npm start`) during the loop's second iteration,
 * restart it, and the loop finishes its three iterations on its own: each model call charged once, the iterations
 * stored once, and a client re-attaching gets the rest of the stream up to [DONE].
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import {
  createBusinessKey,
  platformSetup,
  sqlOnce,
  startPlatformProcess,
  tearDownPlatform,
  type PlatformProcess,
  type PlatformSetup,
} from '../helpers/platform-process.ts';
import { waitFor } from '../helpers/wait.ts';

/** Model calls after the first take this long, so the platform is killed during one. */
const laterCallLatencyMs = 6_000;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[agent-loop-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  const control = simulatorControl(simulator.url);
  await control.addFault({ times: 1, fault: {} });
  await control.addFault({ fault: { latency_ms: laterCallLatencyMs } });
  setup = await platformSetup('agent-loop-kill', simulator.url, { AGENT_IP_LIMIT_PER_MINUTE: '0' });
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

it('finishes a loop killed in its second iteration after a restart, each model call charged once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'loop-kill');

  const response = await fetch(`${setup.agentsUrl}/chat/loop/web:loop-kill`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'Draft it in steps [[iterations 3]]', agent_id: 'writer' }),
  });
  expect(response.status).toBe(200);
  const turnId = response.headers.get('x-turn-id')!;
  const reader = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  let lastId = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended early');
    lastId = value.id ?? lastId;
    if (value.data !== '[DONE]' && (JSON.parse(value.data) as { type: string }).type === 'iteration') break;
  }
  // Iteration 1 is over; killed once iteration 2's model call waits upstream.
  await waitFor('iteration 2’s model call', async () => (await simulatorControl(simulator.url).requests()).total >= 2);
  await platform.kill();
  await reader.cancel().catch(() => undefined);
  log(`killed during iteration 2 of ${turnId}`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const deadline = Date.now() + 150_000;
  let status = 'running';
  while (Date.now() < deadline) {
    [{ status } = { status: 'missing' }] = await sql<{ status: string }>(
      'select status from chat_turns where id = $1',
      [turnId],
    );
    if (status !== 'running') break;
    await sleep(500);
  }
  expect(status).toBe('done');

  // Each model call (attempt) reserved once and settled once; nothing is left held.
  const ledger = await sql<{ kind: string; attempt: number }>(
    `select kind, attempt from credit_ledger where user_id = $1 and workflow_id = $2 order by id`,
    [userId, turnId],
  );
  const byAttempt = new Map<number, string[]>();
  for (const row of ledger) byAttempt.set(row.attempt, [...(byAttempt.get(row.attempt) ?? []), row.kind]);
  expect([...byAttempt.values()]).toEqual([
    ['reserve', 'settle'],
    ['reserve', 'settle'],
    ['reserve', 'settle'],
  ]);
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);

  // The turn holds each iteration once: the question, then answer and continuation prompt per iteration.
  const rows = await sql<{ role: string }>(
    `select role from chat_messages where conversation_id = (select conversation_id from chat_turns where id = $1)
     order by turn, seq`,
    [turnId],
  );
  expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);

  // Re-attaching after the last event the client saw gives the rest, up to [DONE].
  const resumed = await fetch(`${setup.agentsUrl}/chat/turns/${turnId}/stream`, {
    headers: { authorization: `Bearer ${key}`, 'last-event-id': lastId },
  });
  const text = await resumed.text();
  expect(text).toContain('"stop":"done"');
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  passed = true;
}, 420_000);
