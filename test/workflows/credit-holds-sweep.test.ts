/**
 * The sweep of abandoned credit holds as the platform runs it by itself: its Temporal Schedule (every
 * CREDIT_HOLD_SWEEP_INTERVAL, short here, as is CREDIT_HOLD_GRACE) releases a hold whose workflow was never started,
 * as an API process killed between holding credits and starting the workflow leaves one, and leaves the hold of a
 * running workflow, as old, to that workflow's saga. Nothing here calls the sweep.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { CreditLedger } from '../../activities/credits/credit-ledger.ts';
import { openOrm } from '../../db/orm.ts';
import { openPool, type Pool } from '../../db/pool.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

const intervalMs = 3_000;
// The running completion's provider sends its headers, then its body after this long: far past the grace and the
// interval, and within every provider timeout.
const providerStallMs = 30_000;

let platform: TestPlatform;
let connection: Connection;
let client: Client;
let database: pg.Client;
let orm: MikroORM;
let pool: Pool;
let scheduleId: string;

beforeAll(async () => {
  platform = await startTestPlatform({ CREDIT_HOLD_GRACE: '2s', CREDIT_HOLD_SWEEP_INTERVAL: `${intervalMs}ms` });
  scheduleId = `tessera-credit-holds-sweep-${platform.environment.TEMPORAL_TASK_QUEUE}`;
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
  client = new Client({ connection });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  orm = await openOrm(platform.databaseUrl, { poolMax: 1 });
  pool = openPool(platform.databaseUrl, { max: 1 });
});

afterAll(async () => {
  // This task queue has no worker once the platform is gone: its schedule would only wake the shared server.
  await client?.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await pool?.end();
  await orm?.close();
  await database?.end();
  await connection?.close();
  await platform?.close();
});

/** The ledger's kinds for an attempt's key base (`<workflow id>#1`), in order. */
const kindsOf = async (workflowId: string) =>
  (
    await database.query<{ kind: string }>(
      "select kind from credit_ledger where workflow_id = $1 and attempt = 1 and kind in ('reserve', 'settle', 'release') order by id",
      [workflowId],
    )
  ).rows.map((row) => row.kind);

const heldBy = async (userId: string) =>
  (await database.query<{ held: number }>('select credits_held as held from users where id = $1', [userId])).rows[0]!
    .held;

const statusOf = async (workflowId: string) => {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
};

it('is a Temporal Schedule running creditHoldsSweep every CREDIT_HOLD_SWEEP_INTERVAL', async () => {
  const schedule = await client.schedule.getHandle(scheduleId).describe();
  expect(schedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'creditHoldsSweep' });
  expect(schedule.spec.intervals).toEqual([expect.objectContaining({ every: intervalMs })]);
});

it('releases by itself a hold whose workflow never started, and leaves the hold of a running workflow', async () => {
  const { key, user_id: userId } = await platform.createKey();
  await platform.simulator.addFault({ times: 1, fault: { stall_after_tokens: 0, stall_ms: providerStallMs } });
  const completion = platform.openai(key).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Take your time' }],
  });
  const running = await waitFor('the completion to hold its credits', async () => {
    const { rows } = await database.query<{ workflow_id: string; amount: number }>(
      "select workflow_id, amount from credit_ledger where user_id = $1 and kind = 'reserve'",
      [userId],
    );
    return rows[0];
  });
  expect(await waitFor('its workflow to run', async () => (await statusOf(running.workflow_id)) === 'RUNNING')).toBe(
    true,
  );

  // A hold written through the ledger for a workflow nobody starts.
  const abandoned = `completion-chatcmpl-never-started-${randomBytes(6).toString('hex')}`;
  const ledger = new CreditLedger(orm, pool);
  expect(await ledger.reserve({ userId, workflowId: abandoned, attempt: 1, amount: 7, model: 'gpt-4o-mini' })).toEqual({
    ok: true,
  });
  expect(await heldBy(userId)).toBe(running.amount + 7);

  await waitFor('the platform to release the abandoned hold', async () =>
    (await kindsOf(abandoned)).includes('release'),
  );
  expect(await kindsOf(abandoned)).toEqual(['reserve', 'release']);
  expect(await statusOf(abandoned)).toBe('NOT_FOUND');
  // The completion's hold is older than the abandoned one, so that sweep asked about it too: still running, it kept it.
  expect(await statusOf(running.workflow_id)).toBe('RUNNING');
  expect(await kindsOf(running.workflow_id)).toEqual(['reserve']);
  expect(await heldBy(userId)).toBe(running.amount);

  // Its own saga settles it (the answer may reach the client a moment before): charged once, never released.
  const answer = await completion;
  expect(answer.choices[0]?.message.content).toBeTruthy();
  await waitFor('the completion to settle', async () => (await kindsOf(running.workflow_id)).length > 1);
  expect(await kindsOf(running.workflow_id)).toEqual(['reserve', 'settle']);
  expect(await heldBy(userId)).toBe(0);
}, 120_000);
