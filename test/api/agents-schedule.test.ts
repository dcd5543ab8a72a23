/**
 * Scheduled tasks through HTTP (spec 4.5): a task firing every two seconds runs the agent in the task's session,
 * pauses (enabled false) and resumes, changes, and is deleted with its Temporal schedule; a run without credits is
 * visible as failed; reconciliation at start removes a schedule whose row is gone and recreates a missing one;
 * hostile input (invalid cron, too frequent, unknown time zone or agent, another user's task).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import pg from 'pg';
import { startGateway } from '../../api/server.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Client;
let connection: Connection;
let temporal: Client;
let key: string;
let otherKey: string;

beforeAll(async () => {
  platform = await startTestPlatform({ SCHEDULE_MIN_INTERVAL_SECONDS: '1', SCHEDULE_CATCHUP_WINDOW: '1 minute' });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS });
  temporal = new Client({ connection });
  key = (await platform.createKey()).key;
  otherKey = (await platform.createKey()).key;
});

afterAll(async () => {
  await database?.end();
  await connection?.close();
  await platform?.close();
});

async function json(response: Response): Promise<Json> {
  return (await response.json()) as Json;
}

const create = (body: Json, as = key) =>
  platform.agents('/schedule/tasks', { method: 'POST', key: as, body: JSON.stringify(body) });
const patch = (id: string, body: Json, as = key) =>
  platform.agents(`/schedule/tasks/${id}`, { method: 'PATCH', key: as, body: JSON.stringify(body) });
const listed = async (id: string, as = key): Promise<Json | undefined> =>
  (await json(await platform.agents('/schedule/tasks', { key: as }))).tasks.find((task: Json) => task.id === id);

async function answers(taskId: string, as = key): Promise<Json[]> {
  const response = await platform.agents(`/history/${encodeURIComponent(`schedule:${taskId}`)}`, { key: as });
  if (response.status === 404) return [];
  return (await json(response)).messages.filter((message: Json) => message.role === 'assistant');
}

describe('a scheduled task', () => {
  it('runs every two seconds in its session, pauses, resumes, changes, and is deleted with its schedule', async () => {
    const response = await create({ cron: '*/2 * * * * *', agent_id: 'general', message: 'Give me a status line.' });
    expect(response.status).toBe(201);
    const task = await json(response);
    expect(task).toMatchObject({
      id: expect.stringMatching(/^tsk_/),
      agent_id: 'general',
      enabled: true,
      timezone: 'UTC',
      schedule_id: `schedule-${task.id}`,
      session_id: `schedule:${task.id}`,
      last_run: null,
    });
    expect(task.next_runs).toHaveLength(3);
    expect(Date.parse(task.next_runs[1]) - Date.parse(task.next_runs[0])).toBe(2000);
    const schedule = await temporal.schedule.getHandle(task.schedule_id).describe();
    expect(schedule.policies.overlap).toBe('SKIP');
    expect(schedule.state.paused).toBe(false);

    // It runs: the answer is in the task's session, and the listing shows the run.
    await waitFor('a first answer', async () => (await answers(task.id)).length >= 1);
    const done = await waitFor('a run recorded as done', async () => {
      const current = await listed(task.id);
      return current?.last_run?.status === 'done' && current;
    });
    expect(done.last_run).toMatchObject({ status: 'done', turn_id: expect.any(String) });
    const history = await json(await platform.agents(`/history/${encodeURIComponent(task.session_id)}`, { key }));
    expect(history.messages.find((message: Json) => message.role === 'user')).toMatchObject({
      content: 'Give me a status line.',
      channel: 'schedule',
    });

    // Paused: no run starts while it is (a run already going may still finish).
    const paused = await json(await patch(task.id, { enabled: false }));
    expect(paused).toMatchObject({ enabled: false, next_runs: [] });
    expect((await temporal.schedule.getHandle(task.schedule_id).describe()).state.paused).toBe(true);
    // A run that fired just before the pause may still be going: the count is taken once every run the schedule
    // started has ended (Temporal's own record of its actions).
    const handle = temporal.schedule.getHandle(task.schedule_id);
    const taken = await waitFor('every run started before the pause to end', async () => {
      const { info } = await handle.describe();
      for (const action of info.recentActions) {
        const { workflowId, firstExecutionRunId } = action.action.workflow;
        const run = temporal.workflow.getHandle(workflowId, firstExecutionRunId);
        if ((await run.describe()).status.name === 'RUNNING') return false;
      }
      return info.numActionsTaken;
    });
    const before = (await answers(task.id)).length;
    // Then three of the cron's fire times pass (every 2 s) with no action taken and no answer added.
    const pausedUntil = Date.now() + Date.parse(task.next_runs[2]) - Date.parse(task.next_runs[0]) + 1_000;
    await waitFor('three fire times while paused', async () => Date.now() > pausedUntil);
    expect((await handle.describe()).info.numActionsTaken).toBe(taken);
    expect((await answers(task.id)).length).toBe(before);

    // Resumed, with another message: runs again.
    const resumed = await json(await patch(task.id, { enabled: true, message: 'Second status line.' }));
    expect(resumed).toMatchObject({ enabled: true, message: 'Second status line.' });
    expect(resumed.next_runs).toHaveLength(3);
    expect((await temporal.schedule.getHandle(task.schedule_id).describe()).state.paused).toBe(false);
    await waitFor('a run after resuming', async () => (await answers(task.id)).length > before);

    // A new cron and time zone reach the schedule.
    const changed = await json(await patch(task.id, { cron: '0 9 * * MON-FRI', timezone: 'Asia/Tokyo' }));
    expect(changed).toMatchObject({ cron: '0 9 * * MON-FRI', timezone: 'Asia/Tokyo' });
    expect(new Date(changed.next_runs[0]).getUTCHours()).toBe(0);
    const spec = (await temporal.schedule.getHandle(task.schedule_id).describe()).spec;
    expect(spec.timezone).toBe('Asia/Tokyo');

    // Deleted: the row and the Temporal schedule are gone.
    const deleted = await platform.agents(`/schedule/tasks/${task.id}`, { method: 'DELETE', key });
    expect(deleted.status).toBe(200);
    expect(await listed(task.id)).toBeUndefined();
    await expect(temporal.schedule.getHandle(task.schedule_id).describe()).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
    expect((await platform.agents(`/schedule/tasks/${task.id}`, { method: 'DELETE', key })).status).toBe(404);
  }, 90_000);

  it('fails a run cleanly when the owner has no credits, and shows it in the listing', async () => {
    const poor = await platform.createKey();
    await database.query('update users set credits_balance = 0 where id = $1', [poor.user_id]);
    const task = await json(
      await create({ cron: '*/2 * * * * *', agent_id: 'general', message: 'Anything new?' }, poor.key),
    );
    const failed = await waitFor('a failed run', async () => {
      const current = await listed(task.id, poor.key);
      return current?.last_run?.status === 'failed' && current;
    });
    expect(failed.last_run.error).toMatch(/^insufficient_credits: /);
    expect(await answers(task.id, poor.key)).toEqual([]);
    expect((await platform.agents(`/schedule/tasks/${task.id}`, { method: 'DELETE', key: poor.key })).status).toBe(200);
  }, 60_000);

  it('is reconciled at start: a schedule whose row is gone is deleted, a row without a schedule gets one', async () => {
    const kept = await json(await create({ cron: '0 0 1 1 *', agent_id: 'general', message: 'Happy new year' }));
    const orphan = await json(await create({ cron: '0 0 1 1 *', agent_id: 'general', message: 'Orphan' }));
    await database.query('delete from schedule_tasks where id = $1', [orphan.id]);
    await temporal.schedule.getHandle(kept.schedule_id).delete();
    // The schedule list is eventually consistent: wait until it shows the orphan.
    await waitFor('the orphan in the schedule list', async () => {
      for await (const summary of temporal.schedule.list()) if (summary.scheduleId === orphan.schedule_id) return true;
      return false;
    });
    const replica = await startGateway(platform.environment);
    try {
      await expect(temporal.schedule.getHandle(orphan.schedule_id).describe()).rejects.toBeInstanceOf(
        ScheduleNotFoundError,
      );
      const recreated = await temporal.schedule.getHandle(kept.schedule_id).describe();
      expect(recreated.memo).toMatchObject({ task: kept.id });
    } finally {
      await replica.close();
    }
  }, 60_000);
});

describe('hostile input', () => {
  it('refuses an invalid cron, naming the field', async () => {
    for (const cron of ['61 * * * *', 'every minute', '* * * * * * *', '0 0 L * *']) {
      const response = await create({ cron, agent_id: 'general', message: 'hi' });
      expect(response.status).toBe(400);
      expect((await json(response)).error).toMatchObject({ type: 'invalid_request', param: 'cron' });
    }
  });

  it('refuses a cron firing more often than the minimum interval', async () => {
    // The test platform allows every second; a replica with the default-like minute does not.
    const strict = await startGateway({ ...platform.environment, SCHEDULE_MIN_INTERVAL_SECONDS: '60' });
    try {
      const refused = await fetch(`${strict.agents!.url}/schedule/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ cron: '* * * * * *', agent_id: 'general', message: 'hi' }),
      });
      expect(refused.status).toBe(400);
      const body = await json(refused);
      expect(body.error).toMatchObject({ type: 'invalid_request', param: 'cron' });
      expect(body.error.message).toMatch(/at most once every 60 seconds/);
    } finally {
      await strict.close();
    }
  });

  it('refuses an unknown time zone or agent, and unknown fields', async () => {
    const zone = await create({ cron: '0 9 * * *', agent_id: 'general', message: 'hi', timezone: 'Mars/Base' });
    expect(zone.status).toBe(400);
    expect((await json(zone)).error).toMatchObject({ param: 'timezone' });
    const agent = await create({ cron: '0 9 * * *', agent_id: 'nobody', message: 'hi' });
    expect(agent.status).toBe(404);
    expect((await json(agent)).error).toMatchObject({ param: 'agent_id' });
    const extra = await create({ cron: '0 9 * * *', agent_id: 'general', message: 'hi', every: 1 });
    expect(extra.status).toBe(400);
    const unauthenticated = await platform.agents('/schedule/tasks');
    expect(unauthenticated.status).toBe(401);
  });

  it("answers another user's task as not found", async () => {
    const task = await json(await create({ cron: '0 9 * * *', agent_id: 'general', message: 'mine' }));
    expect((await patch(task.id, { enabled: false }, otherKey)).status).toBe(404);
    expect((await platform.agents(`/schedule/tasks/${task.id}`, { method: 'DELETE', key: otherKey })).status).toBe(404);
    expect(await listed(task.id, otherKey)).toBeUndefined();
    expect(await listed(task.id)).toMatchObject({ enabled: true });
    await platform.agents(`/schedule/tasks/${task.id}`, { method: 'DELETE', key });
  });
});
