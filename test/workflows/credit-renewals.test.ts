/** Monthly credits renew through a Temporal Schedule's workflow, catching up missed months, never twice. */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let connection: Connection;
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await connection?.close();
  await platform?.close();
});

it('is scheduled, and grants each missed cycle once for accounts outside Stripe', async () => {
  const client = new Client({ connection });
  const taskQueue = platform.environment.TEMPORAL_TASK_QUEUE!;
  const schedule = await client.schedule.getHandle(`tessera-credit-renewals-${taskQueue}`).describe();
  expect(schedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'creditRenewalsWorkflow' });

  const free = await platform.createKey(undefined, 'free');
  const subscribed = await platform.createKey(undefined, 'pro');
  // Both accounts started their cycle two months and a day ago; the pro one pays through Stripe.
  await database.query(`update users set plan_cycle_start = now() - interval '2 months 1 day' where id = any($1)`, [
    [free.user_id, subscribed.user_id],
  ]);
  await database.query(`update users set stripe_subscription_id = 'sub_test' where id = $1`, [subscribed.user_id]);
  const balance = async (userId: string) =>
    (await database.query<{ credits_balance: number }>('select credits_balance from users where id = $1', [userId]))
      .rows[0]!.credits_balance;
  const before = { free: await balance(free.user_id), subscribed: await balance(subscribed.user_id) };

  const run = () =>
    client.workflow.execute('creditRenewalsWorkflow', { taskQueue, workflowId: `renewals-test-${Date.now()}` });
  expect(await run()).toEqual({ renewed: 2 });
  expect(await run()).toEqual({ renewed: 0 });
  expect(await balance(free.user_id)).toBe(before.free + 200);
  expect(await balance(subscribed.user_id)).toBe(before.subscribed);
  const grants = await database.query(
    "select count(*)::int as count from credit_ledger where user_id = $1 and kind = 'grant'",
    [free.user_id],
  );
  expect(grants.rows[0].count).toBe(3);
});
