/**
 * `GET /dashboard` and `GET /metrics` of the agent service through HTTP: real agent turns (with a tool call), a
 * scheduled task and a tool call waiting for approval; each user sees their own figures only, the operator the
 * platform's; the counters of turns by agent and outcome and tool calls by tool and outcome, and the approvals
 * waiting, as Prometheus text. The figures follow the history as it changes: a failed turn, credits per agent, a
 * deleted session, a Telegram chat linked to the account (test/db/usage-rollups.test.ts checks every kind of change
 * against the rows).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { simulatedMessengers, newTelegramChat } from '../helpers/messengers.ts';
import { readSse } from '../helpers/sse.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let smtp: TestSmtp;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };
let aliceCredits = 0;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

async function turn(key: string, message: string, sessionId = `web:${randomUUID()}`, agent = 'general') {
  const response = await platform.agents(`/chat/stream/${sessionId}`, {
    method: 'POST',
    key,
    body: JSON.stringify({ message, preferred_agents: [agent] }),
  });
  expect(response.status).toBe(200);
  await readSse(response);
  const usage = (await (await platform.agents(`/usage/${sessionId}`, { key })).json()) as Json;
  return usage.credits as number;
}

async function dashboard(key: string, query = '') {
  const response = await platform.agents(`/dashboard${query}`, { key });
  return { status: response.status, body: (await response.json()) as Json };
}

async function metric(line: string): Promise<number> {
  const text = await (await platform.agents('/metrics')).text();
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({ SMTP_URL: smtp.url, AGENT_APPROVAL_TIMEOUT: '2m' });
  alice = await platform.createKey();
  bob = await platform.createKey();
  aliceCredits += await turn(alice.key, `What is 2 + 2? ${call('calculator', { expression: '2 + 2' })}`);
  aliceCredits += await turn(alice.key, 'Hello there');
  await turn(bob.key, 'Hello from Bob');
  const task = await platform.agents('/schedule/tasks', {
    method: 'POST',
    key: alice.key,
    body: JSON.stringify({ cron: '0 9 * * *', agent_id: 'general', message: 'Good morning summary' }),
  });
  expect(task.status).toBe(201);
});

afterAll(async () => {
  await platform?.close();
  await smtp?.close();
});

describe('GET /dashboard', () => {
  it('gives the caller’s own figures', async () => {
    const { status, body } = await dashboard(alice.key);
    expect(status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    expect(body).toMatchObject({
      scope: 'user',
      days: 30,
      // 2 turns: the question, the call, its result and the answer; the greeting and its answer.
      totals: { messages: 6, turns: 2, failed_turns: 0, tool_calls: 1, credits_used: aliceCredits },
      messages_per_day: [{ day: today, messages: 6 }],
      turns_per_day: [{ day: today, turns: 2, failed: 0 }],
      credits_per_day: [{ day: today, credits: aliceCredits }],
      credits_per_agent: [{ agent_id: 'general', credits: aliceCredits }],
      top_agents: [{ agent_id: 'general', turns: 2, failed: 0 }],
      top_tools: [{ tool: 'calculator', calls: 1 }],
      media_jobs: { by_status: {}, by_kind: {} },
    });
    expect(aliceCredits).toBeGreaterThan(0);
    expect(body.schedules).toEqual({
      total: 1,
      enabled: 1,
      last_run_by_status: { never: 1 },
      tasks: [
        {
          task_id: expect.stringMatching(/^tsk_/),
          agent_id: 'general',
          cron: '0 9 * * *',
          timezone: 'UTC',
          enabled: true,
          last_run_at: null,
          last_run_status: null,
          next_run_at: expect.stringMatching(/T09:00:00\.000Z$/),
        },
      ],
    });
    expect(Date.parse(body.schedules.tasks[0].next_run_at)).toBeGreaterThan(Date.now());
  });

  it('never shows another user’s figures', async () => {
    const { body } = await dashboard(bob.key);
    expect(body).toMatchObject({
      scope: 'user',
      totals: { messages: 2, turns: 1, tool_calls: 0 },
      top_tools: [],
      schedules: { total: 0, enabled: 0, tasks: [] },
    });
    expect(JSON.stringify(body)).not.toContain('calculator');
  });

  it('gives the operator the platform’s', async () => {
    const { body } = await dashboard(platform.masterKey, '?days=7');
    expect(body).toMatchObject({
      scope: 'platform',
      days: 7,
      totals: { messages: 8, turns: 3, tool_calls: 1 },
      top_agents: [{ agent_id: 'general', turns: 3, failed: 0 }],
      schedules: { total: 1, enabled: 1 },
    });
  });

  it('refuses a bad period and a caller without credentials', async () => {
    const bad = await dashboard(alice.key, '?days=0');
    expect(bad).toMatchObject({ status: 400, body: { error: { type: 'invalid_request', param: 'days' } } });
    expect((await dashboard(alice.key, '?days=91')).status).toBe(400);
    expect((await platform.agents('/dashboard')).status).toBe(401);
  });
});

describe('GET /metrics', () => {
  it('counts turns by agent and outcome and tool calls by tool and outcome', async () => {
    expect(await metric('tessera_agent_turns_total{agent="general",outcome="done"}')).toBe(3);
    expect(await metric('tessera_agent_tool_calls_total{tool="calculator",outcome="ok"}')).toBe(1);
  });

  it('shows the approvals waiting, platform-wide, until decided', async () => {
    const agent = await createCustomAgent(platform, alice.key, {
      name: 'Mailer',
      description: 'Sends e-mail',
      system_prompt: 'You send e-mail.',
      tools: ['send_email'],
    });
    expect(await metric('tessera_agent_approvals_waiting')).toBe(0);
    const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
      method: 'POST',
      key: alice.key,
      body: JSON.stringify({
        message: call('send_email', { to: 'someone@example.com', subject: 'Hi', body: 'Hello' }),
        preferred_agents: [agent],
      }),
    });
    const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    let required: Json | undefined;
    while (!required) {
      const next = await reader.read();
      if (next.done) throw new Error('the stream ended before hitl_required');
      const data = JSON.parse(next.value.data) as Json;
      if (data.type === 'hitl_required') required = data;
    }
    await waitFor('the approval to be counted', async () => (await metric('tessera_agent_approvals_waiting')) === 1);
    const rejected = await platform.agents(`/chat/approvals/${required.id}/reject`, { method: 'POST', key: alice.key });
    expect(rejected.status).toBe(200);
    await waitFor(
      'the approval to leave the count',
      async () => (await metric('tessera_agent_approvals_waiting')) === 0,
    );
    while (!(await reader.read()).done);
    await waitFor(
      'the turn to be counted',
      async () => (await metric('tessera_agent_turns_total{agent="custom",outcome="done"}')) === 1,
    );
    expect(await metric('tessera_agent_tool_calls_total{tool="calculator",outcome="ok"}')).toBe(1);
  });
});

describe('GET /dashboard as the history changes', () => {
  let carol: { key: string; user_id: string };
  const today = () => new Date().toISOString().slice(0, 10);
  const { telegramSays, sentTo } = simulatedMessengers(() => platform);

  beforeAll(async () => {
    carol = await platform.createKey();
  });

  it('counts a failed turn as failed', async () => {
    // The turn's model call is refused upstream (a 400 is not failed over): the turn ends failed.
    await platform.simulator.addFault({ times: 1, fault: { status: 400 } });
    try {
      await turn(carol.key, 'This one will fail');
    } finally {
      await platform.simulator.clearFaults();
    }
    const { body } = await dashboard(carol.key);
    expect(body).toMatchObject({
      totals: { turns: 1, failed_turns: 1, credits_used: 0 },
      turns_per_day: [{ day: today(), turns: 1, failed: 1 }],
      top_agents: [{ agent_id: 'general', turns: 1, failed: 1 }],
      credits_per_agent: [],
    });
  });

  it('gives the credits each agent spent', async () => {
    const general = await turn(carol.key, 'Hello general');
    const coder = await turn(carol.key, 'Write a haiku about types', `web:${randomUUID()}`, 'coder');
    expect(general).toBeGreaterThan(0);
    expect(coder).toBeGreaterThan(0);
    const { body } = await dashboard(carol.key);
    expect(body.totals).toMatchObject({ turns: 3, failed_turns: 1, credits_used: general + coder });
    expect(body.credits_per_agent).toEqual(
      expect.arrayContaining([
        { agent_id: 'general', credits: general },
        { agent_id: 'coder', credits: coder },
      ]),
    );
    expect(body.credits_per_agent).toHaveLength(2);
    expect(body.top_agents).toEqual(
      expect.arrayContaining([
        { agent_id: 'general', turns: 2, failed: 1 },
        { agent_id: 'coder', turns: 1, failed: 0 },
      ]),
    );
  });

  it('forgets a deleted session’s messages and turns; its credits stay spent', async () => {
    const sessionId = `web:${randomUUID()}`;
    const before = (await dashboard(carol.key)).body;
    const credits = await turn(carol.key, 'A chat to delete', sessionId);
    const during = (await dashboard(carol.key)).body;
    expect(during.totals).toMatchObject({
      messages: before.totals.messages + 2,
      turns: before.totals.turns + 1,
      credits_used: before.totals.credits_used + credits,
    });
    const deleted = await platform.agents(`/sessions/${sessionId}`, { method: 'DELETE', key: carol.key });
    expect(deleted.status).toBe(200);
    const after = (await dashboard(carol.key)).body;
    expect(after.totals).toEqual({ ...before.totals, credits_used: before.totals.credits_used + credits });
    expect(after.messages_per_day).toEqual(before.messages_per_day);
    expect(after.turns_per_day).toEqual(before.turns_per_day);
    expect(after.top_agents).toEqual(before.top_agents);
    // The credits were spent; the turn that names their agent is gone with its session.
    expect(after.credits_per_agent).toEqual(expect.arrayContaining([{ agent_id: null, credits }]));
  });

  it('counts a linked Telegram chat’s history for the account it was linked to', async () => {
    const chat = newTelegramChat();
    const before = (await dashboard(carol.key)).body;
    const platformBefore = (await dashboard(platform.masterKey)).body;
    await telegramSays(chat, 'Hello from Telegram');
    await sentTo('telegram', chat);
    // The chat's own turn: the platform's, not yet Carol's.
    await waitFor(
      'the chat’s turn in the platform’s figures',
      async () => (await dashboard(platform.masterKey)).body.totals.messages === platformBefore.totals.messages + 2,
    );
    expect((await dashboard(carol.key)).body.totals).toEqual(before.totals);
    // Linked by a code from the account (the helper's `link` expects a chat with no message yet).
    const issued = (await (await platform.agents('/link/code', { key: carol.key })).json()) as Json;
    await telegramSays(chat, `/link ${issued.code as string}`);
    expect((await sentTo('telegram', chat, 2))[1]).toContain('Linked');
    const after = (await dashboard(carol.key)).body;
    expect(after.totals).toMatchObject({
      messages: before.totals.messages + 2,
      turns: before.totals.turns + 1,
      failed_turns: before.totals.failed_turns,
    });
    // The platform's figures only changed hands.
    expect((await dashboard(platform.masterKey)).body.totals.messages).toBe(platformBefore.totals.messages + 2);
  });
});
