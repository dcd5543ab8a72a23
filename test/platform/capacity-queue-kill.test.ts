/**
 * The capacity queue survives the whole platform: SIGKILL `npm start` while a free account's background responses run
 * (its two slots) and three more wait `queued` in the queue, start it again, and every one completes by itself, in its
 * turn, each charged once, with no place, slot or credit hold left behind. The official `openai` SDK is the client.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import {
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

const log = (line: string) => process.stderr.write(`[capacity-queue-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  // Every answer takes 3 s: the platform is killed while two run and three wait.
  await simulatorControl(simulator.url).addFault({ fault: { latency_ms: 3_000 } });
  setup = await platformSetup('capacity-queue-kill', simulator.url);
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

it('loses no waiting job and starts none twice across a SIGKILL of the whole platform', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const created = await fetch(`${setup.apiUrl}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${setup.environment.MASTER_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'queue-kill@example.com', plan: 'free' }),
  });
  const { key, user_id: userId } = (await created.json()) as { key: string; user_id: string };
  const client = new OpenAI({ apiKey: key, baseURL: `${setup.apiUrl}/v1`, maxRetries: 0 });
  const inputs = ['One', 'Two', 'Three', 'Four', 'Five'];
  const ids: string[] = [];
  for (const input of inputs) {
    ids.push(
      (await client.responses.create({ model: 'gpt-4o-mini', input, background: true, max_output_tokens: 20 })).id,
    );
  }
  await waitFor('two to run and three to wait', async () => {
    const rows = await sql<{ status: string }>('select status from model_responses where id = any($1)', [ids]);
    const waiting = await sql<{ n: number }>(
      'select count(*)::int as n from capacity_waiters where user_id = $1 and granted_at is null',
      [userId],
    );
    return rows.filter((row) => row.status === 'in_progress').length === 2 && waiting[0]!.n === 3;
  });
  await platform.kill();
  log('killed with two running and three queued');

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  // Watched in the rows (a free account's hourly limit would not take polling through the API), then read once.
  await waitFor(
    'every response to complete after the restart',
    async () => {
      const rows = await sql<{ status: string }>('select status from model_responses where id = any($1)', [ids]);
      return rows.length === ids.length && rows.every((row) => row.status === 'completed');
    },
    180_000,
  );
  const done = await Promise.all(ids.map((id) => client.responses.retrieve(id)));
  expect(done.map((answer) => answer.output_text)).toEqual(inputs.map((input) => expect.stringContaining(input)));

  // Each charged once; nothing held; no place or slot left.
  const settled = await sql<{ workflow_id: string }>(
    `select workflow_id from credit_ledger where user_id = $1 and kind = 'settle' order by workflow_id`,
    [userId],
  );
  expect(settled.map((row) => row.workflow_id)).toEqual(ids.map((id) => `completion-${id}`).sort());
  await waitFor('every slot to be given back', async () => {
    const left = await sql('select 1 from capacity_waiters where user_id = $1', [userId]);
    return left.length === 0;
  });
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);
  passed = true;
}, 600_000);
