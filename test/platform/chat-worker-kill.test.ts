/**
 * A chat turn survives its worker: SIGKILL the whole platform (`npm start`) after the turn's tool ran and while
 * its second model call is under way, restart it, and the turn finishes on its own: the tool is not run again (it
 * appends a line to a sandbox file, so a second run would show), every model call is charged once, and the session
 * holds the turn once.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { sandboxDirectory } from '../../activities/tools/sandbox.ts';
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

/**
 * The model call after the tool hangs this long, so the platform is killed during it: far longer than a kill can take
 * on a busy machine (the kill first lists the process tree), since a call that answered before the kill would be
 * taken from the journal after the restart instead of being made again. The call made after the restart answers at
 * once.
 */
const secondCallLatencyMs = 120_000;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let dataDir: string;
let environment: Record<string, string | undefined>;
let apiUrl: string;
let databaseUrl: string;
let passed = false;

const log = (line: string) => process.stderr.write(`[chat-worker-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  const control = simulatorControl(simulator.url);
  // The turn's first model call (asking for the tool) answers at once, the second hangs, any later one is quick.
  await control.addFault({ times: 1, fault: {} });
  await control.addFault({ times: 1, fault: { latency_ms: secondCallLatencyMs } });
  setup = await platformSetup('chat-worker-kill', simulator.url);
  ({ dataDir, apiUrl, databaseUrl } = setup);
  environment = { ...setup.environment, SANDBOX_DIR: join(dataDir, 'sandboxes') };
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(databaseUrl, text, values);

it('finishes a turn killed mid-way after a restart, with its tool run once and each model call charged once', async () => {
  platform = startPlatformProcess(environment);
  await platform.waitForHttp(`${apiUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'kill');

  const sessionId = 'api:worker-kill';
  const write = { path: 'runs.txt', content: 'ran\n', append: true };
  const response = await fetch(`${apiUrl}/api/v1/chat/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      message: `Note the run. [[call file_write ${JSON.stringify(write)}]]`,
      session_id: sessionId,
    }),
  });
  expect(response.status).toBe(200);
  const turnId = response.headers.get('x-turn-id')!;
  // Read the stream until the tool's result, then kill everything while the next model call waits upstream.
  const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const seen: string[] = [];
  const reader = events.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen.push(value.event ?? 'message');
    if (value.event === 'tool_result') break;
  }
  expect(seen).toEqual(['start', 'tool_start', 'tool_result']);
  // Killed once the second model call reached the provider: the tool's result is journalled by then.
  await waitFor(
    'the model call after the tool',
    async () => (await simulatorControl(simulator.url).requests()).total >= 2,
  );
  await platform.kill();
  await reader.cancel().catch(() => undefined);
  log(`killed after ${seen.join(', ')} of ${turnId}`);

  platform = startPlatformProcess(environment);
  await platform.waitForHttp(`${apiUrl}/health`, 180_000);
  const deadline = Date.now() + 120_000;
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

  // The tool ran once: one line in the conversation's sandbox file.
  const [conversation] = await sql<{ conversation_id: string }>(
    'select conversation_id from chat_turns where id = $1',
    [turnId],
  );
  const file = join(
    sandboxDirectory({ sandboxRoot: environment.SANDBOX_DIR!, sandboxQuotaBytes: 0 }, conversation!.conversation_id),
    'runs.txt',
  );
  expect(await readFile(file, 'utf8')).toBe('ran\n');

  // Each model call (attempt) reserved once and settled once; the account holds nothing back.
  const ledger = await sql<{ kind: string; attempt: number }>(
    `select kind, attempt from credit_ledger where user_id = $1 and workflow_id = $2 order by id`,
    [userId, turnId],
  );
  const byAttempt = new Map<number, string[]>();
  for (const row of ledger) byAttempt.set(row.attempt, [...(byAttempt.get(row.attempt) ?? []), row.kind]);
  expect([...byAttempt.values()]).toEqual([
    ['reserve', 'settle'],
    ['reserve', 'settle'],
  ]);
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);

  // The session holds the turn once: the question, the tool call, its result, the answer.
  const session = (await (
    await fetch(`${apiUrl}/api/v1/sessions/${sessionId}`, { headers: { authorization: `Bearer ${key}` } })
  ).json()) as { messages: Array<{ role: string }> };
  expect(session.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);

  // The first model call (answered before the kill) was not made again: its answer came from the journal. The
  // second was in flight at the kill and was made again.
  expect((await simulatorControl(simulator.url).requests()).total).toBe(3);

  // The resumed stream gives the rest of the turn from where the client was cut off.
  const resumed = await fetch(`${apiUrl}/api/v1/chat/turns/${turnId}/stream`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const text = await resumed.text();
  expect(text).toContain('event: done');
  passed = true;
}, 420_000);
