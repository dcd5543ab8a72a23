/**
 * A scheduled task's answers reaching its owner's linked messaging apps (docs/scheduled-tasks.md,
 * "Results reach the owner: the session, and the linked messaging app when one is linked"): the owner links a
 * Telegram chat and a LINE chat to their account by `/link CODE` (the code from `GET /link/code`, delivered through
 * the simulator, which plays both platforms), then a task firing every two seconds runs, and each run's answer arrives
 * in both chats once, besides the task's own session `schedule:<id>`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { newLineUser, newTelegramChat, simulatedMessengers, type MessengerName } from '../helpers/messengers.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor, workflowClosed } from '../helpers/wait.ts';
import { scheduleIdOf } from '../../common/schedules.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Client;
let key: string;

beforeAll(async () => {
  platform = await startTestPlatform({ SCHEDULE_MIN_INTERVAL_SECONDS: '1', SCHEDULE_CATCHUP_WINDOW: '1 minute' });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  key = (await platform.createKey()).key;
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

async function json(response: Response): Promise<Json> {
  return (await response.json()) as Json;
}

const { sentTo, link } = simulatedMessengers(() => platform);
/**
 * Resolves once no run of the task's (paused) schedule is running and each of its recent runs has closed: whatever
 * they send has been sent. A condition rather than a pause in which another answer "would have arrived".
 */
async function scheduleRunsEnded(taskId: string): Promise<void> {
  const address = platform.environment.TEMPORAL_ADDRESS!;
  const connection = await Connection.connect({ address });
  try {
    const schedule = new Client({ connection }).schedule.getHandle(scheduleIdOf(taskId));
    const described = await waitFor('the paused schedule to have no run going', async () => {
      const description = await schedule.describe();
      return description.info.runningActions.length === 0 && description;
    });
    for (const { action } of described.info.recentActions) await workflowClosed(address, action.workflow.workflowId);
  } finally {
    await connection.close();
  }
}

/** What the platform sent to a chat so far (`/<platform>/_sent`), not waiting. */
const sentSoFar = (platformName: MessengerName, chat: string) => sentTo(platformName, chat, 0);

describe('a scheduled task of an account with linked messaging apps', () => {
  it('sends each run’s answer to every linked chat, once per run', async () => {
    const telegramChat = newTelegramChat();
    const lineUser = newLineUser();
    await link('telegram', telegramChat, { key });
    await link('line', lineUser, { key });
    expect((await json(await platform.agents('/auth/me', { key }))).linked_apps).toEqual(['line', 'telegram']);

    const created = await platform.agents('/schedule/tasks', {
      method: 'POST',
      key,
      body: JSON.stringify({ cron: '*/2 * * * * *', agent_id: 'general', message: 'Give me a status line.' }),
    });
    expect(created.status).toBe(201);
    const task = await json(created);

    // Two runs reach both chats; then the task is paused and its last run allowed to finish.
    await waitFor(
      'two answers in each chat',
      async () => {
        const [telegram, line] = [await sentSoFar('telegram', telegramChat), await sentSoFar('line', lineUser)];
        return telegram.length >= 3 && line.length >= 3;
      },
      60_000,
    );
    const paused = await platform.agents(`/schedule/tasks/${task.id as string}`, {
      method: 'PATCH',
      key,
      body: JSON.stringify({ enabled: false }),
    });
    expect(paused.status).toBe(200);
    const runs = async () =>
      (
        await database.query<{ turn_id: string }>(
          `select t.id as turn_id from chat_turns t join chat_sessions s on s.conversation_id = t.conversation_id
           where s.key = $1 order by t.number`,
          [`schedule:${task.id as string}`],
        )
      ).rows.map((row) => row.turn_id);
    const history = async (): Promise<Json[]> =>
      (await json(await platform.agents(`/history/${encodeURIComponent(`schedule:${task.id as string}`)}`, { key })))
        .messages;
    // Settled: every run's turn finished and the chats have one answer per run (waiting out a run still going).
    const settled = await waitFor(
      'every run delivered',
      async () => {
        const turns = await runs();
        const answers = (await history()).filter((message) => message.role === 'assistant');
        const [telegram, line] = [await sentSoFar('telegram', telegramChat), await sentSoFar('line', lineUser)];
        const done = (await json(await platform.agents(`/schedule/tasks/${task.id as string}`, { key }))).last_run;
        return (
          done?.status === 'done' &&
          answers.length === turns.length &&
          telegram.length === turns.length + 1 &&
          line.length === turns.length + 1 && { turns, answers }
        );
      },
      60_000,
    );
    expect(settled.turns.length).toBeGreaterThanOrEqual(2);
    // Every run the paused schedule started, the only senders of its answers, has ended.
    await scheduleRunsEnded(task.id as string);

    // Each run's answer, in run order, once in each chat (after the link confirmation); nothing more arrives.
    const answers = settled.answers.map((message) => message.content as string);
    expect(answers.every((answer) => answer.length > 0)).toBe(true);
    expect((await sentSoFar('telegram', telegramChat)).slice(1)).toEqual(answers);
    expect((await sentSoFar('line', lineUser)).slice(1)).toEqual(answers);
    expect(await runs()).toEqual(settled.turns);

    // One send record per run and chat, its parts counted.
    const { rows } = await database.query<{ id: string; replied_parts: number }>(
      `select id, replied_parts from messenger_events where id like 'schedule:%' order by id`,
    );
    expect(rows.map((row) => row.id).sort()).toEqual(
      settled.turns
        .flatMap((turn) => [`schedule:${turn}:line:${lineUser}`, `schedule:${turn}:telegram:${telegramChat}`])
        .sort(),
    );
    expect(rows.every((row) => row.replied_parts === 1)).toBe(true);

    await platform.agents(`/schedule/tasks/${task.id as string}`, { method: 'DELETE', key });
  });
});
