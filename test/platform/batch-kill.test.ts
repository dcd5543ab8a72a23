/**
 * A batch survives the whole platform: SIGKILL `npm start` in the middle of a batch, start it again, and the batch
 * completes by itself; every line appears exactly once in the output, and the ledger holds exactly one charge per
 * line, with nothing left held. The official `openai` SDK is the client.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import OpenAI, { toFile } from 'openai';
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

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[batch-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  // Every answer takes 400 ms: the platform is killed while lines are in flight.
  await simulatorControl(simulator.url).addFault({ fault: { latency_ms: 400 } });
  setup = await platformSetup('batch-kill', simulator.url);
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

it('completes a batch after a SIGKILL of the whole platform, each line once in the output and charged once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'batch-kill');
  const client = new OpenAI({ apiKey: key, baseURL: `${setup.apiUrl}/v1`, maxRetries: 0 });

  const count = 1_500;
  const ids = Array.from({ length: count }, (_, index) => `request-${index + 1}`);
  const text = ids
    .map((customId) =>
      JSON.stringify({
        custom_id: customId,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Answer ${customId}` }], max_tokens: 20 },
      }),
    )
    .join('\n');
  const file = await client.files.create({ file: await toFile(Buffer.from(text), 'requests.jsonl'), purpose: 'batch' });
  const created = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  const before = await waitFor(
    'some lines to be answered',
    async () => {
      const batch = await client.batches.retrieve(created.id);
      return (batch.request_counts?.completed ?? 0) >= 50 ? batch : null;
    },
    120_000,
  );
  expect(before.status).toBe('in_progress');
  await platform.kill();
  log(`killed with ${before.request_counts?.completed} of ${count} lines answered`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const batch = await waitFor(
    'the batch to complete after the restart',
    async () => {
      const current = await client.batches.retrieve(created.id);
      return current.status === 'completed' ? current : null;
    },
    300_000,
  );
  expect(batch.request_counts).toEqual({ total: count, completed: count, failed: 0 });
  expect(batch.error_file_id).toBeNull();

  // Every line once, each its own answer.
  const output = (await (await client.files.content(batch.output_file_id!)).text())
    .trim()
    .split('\n')
    .map(
      (line) =>
        JSON.parse(line) as {
          custom_id: string;
          response: { status_code: number; body: { choices: Array<{ message: { content: string } }> } };
        },
    );
  expect(output.map((line) => line.custom_id)).toEqual(ids);
  for (const line of output) {
    expect(line.response.status_code).toBe(200);
    expect(line.response.body.choices[0]!.message.content).toContain(`Answer ${line.custom_id}`);
  }

  // One settlement per line, whatever ran twice; nothing held.
  const settled = await sql<{ workflow_id: string; settlements: number }>(
    `select workflow_id, count(*)::int as settlements from credit_ledger
     where user_id = $1 and kind = 'settle' group by workflow_id`,
    [userId],
  );
  expect(settled).toHaveLength(count);
  expect(settled.every((row) => row.settlements === 1)).toBe(true);
  expect(new Set(settled.map((row) => row.workflow_id))).toEqual(
    new Set(ids.map((_, index) => `batch-${created.id}/${index + 1}`)),
  );
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);
  passed = true;
}, 600_000);
