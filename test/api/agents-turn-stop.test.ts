/**
 * Stop, for a turn that is not a loop (`POST /chat/turns/{id}/cancel`), through HTTP as the web app's Stop button
 * uses it: a streaming answer ends at once with what was streamed (kept in the history, billed at what it used, the
 * next message runs), a tool waiting for approval counts as rejected, a running tool is stopped, and nobody else may
 * stop the turn. The provider stalls mid-answer (a simulator fault), so only the stop can end the answer in time:
 * left alone, it would end in the provider's idle timeout's error instead.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { AgentStreamReader } from '../helpers/agent-stream.ts';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let smtp: TestSmtp;
let database: pg.Pool;
let key: string;
let userId: string;
let otherKey: string;
let toolAgent: string;
let storyteller: string;

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({ SMTP_URL: smtp.url, AGENT_APPROVAL_TIMEOUT: '10m' });
  ({ key, user_id: userId } = await platform.createKey());
  otherKey = (await platform.createKey()).key;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  toolAgent = await createCustomAgent(platform, key, {
    name: 'Runner',
    description: 'Runs code and sends e-mail',
    system_prompt: 'You run code.',
    tools: ['code_execute', 'send_email'],
  });
  storyteller = await createCustomAgent(platform, key, {
    name: 'Storyteller',
    description: 'Tells stories',
    system_prompt: 'You tell stories.',
    model: 'gpt-4o-mini',
  });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await smtp?.close();
});

async function open(sessionId: string, body: Json): Promise<{ reader: AgentStreamReader; turnId: string }> {
  const response = await platform.agents(`/chat/stream/${sessionId}`, {
    method: 'POST',
    key,
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`stream: ${response.status} ${await response.text()}`);
  return { reader: new AgentStreamReader(response), turnId: response.headers.get('x-turn-id')! };
}

const stop = (turnId: string, apiKey = key) =>
  platform.agents(`/chat/turns/${turnId}/cancel`, { method: 'POST', key: apiKey });

const text = (events: Json[]) =>
  events
    .filter((event) => event.type === 'token')
    .map((event) => event.text as string)
    .join('');

it('stops a streaming answer at once: what was streamed is the answer, kept, billed at what it used', async () => {
  // The agent's model sends three tokens, then stalls for a minute.
  await platform.simulator.addFault({
    match: { protocol: 'openai' },
    times: 1,
    fault: { stall_after_tokens: 3, stall_ms: 60_000 },
  });
  const session = `web:${randomUUID()}`;
  const { reader, turnId } = await open(session, {
    message: 'Write a long story about a lighthouse keeper',
    preferred_agents: [storyteller],
  });
  await reader.until('token');

  expect((await stop(turnId, otherKey)).status).toBe(404);
  const stopped = await stop(turnId);
  expect(stopped.status).toBe(202);
  expect(await stopped.json()).toEqual({ turn_id: turnId, cancelling: true });

  const events = await reader.rest();
  expect(events.filter((event) => event.type === 'error')).toEqual([]);
  const cost = events.find((event) => event.type === 'cost')!;
  expect(cost).toMatchObject({ stop: 'cancelled', model: 'gpt-4o-mini' });
  const streamed = text(events);
  expect(streamed.length).toBeGreaterThan(0);
  expect(cost.output_tokens).toBeGreaterThan(0);
  expect(cost.output_tokens).toBeLessThanOrEqual(5);

  // The history keeps the answer as far as it went.
  const history = (await (await platform.agents(`/history/${session}`, { key })).json()) as Json;
  const last = history.messages.at(-1);
  expect(last).toMatchObject({ role: 'assistant', content: streamed });

  // Billed at what it used (estimated: the provider never sent its usage), and no hold is left.
  const { rows: settled } = await database.query<{ amount: number; estimated: boolean; completion_tokens: number }>(
    `select amount, estimated, completion_tokens from credit_ledger where workflow_id = $1 and kind = 'settle'`,
    [turnId],
  );
  expect(settled).toEqual([expect.objectContaining({ estimated: true, completion_tokens: cost.output_tokens })]);
  expect(settled[0]!.amount).toBe(cost.credits);
  const { rows: holds } = await database.query('select 1 from credit_holds where workflow_id = $1', [turnId]);
  expect(holds).toEqual([]);

  // The turn has ended: stopping it again is a conflict; the conversation goes on.
  expect((await stop(turnId)).status).toBe(409);
  const next = await open(session, { message: 'Now a short poem', preferred_agents: [storyteller] });
  const nextEvents = await next.reader.rest();
  expect(nextEvents.find((event) => event.type === 'cost')).not.toHaveProperty('stop');
  expect(text(nextEvents).length).toBeGreaterThan(0);
});

it('stops a turn waiting for approval: the call counts as rejected and is not run', async () => {
  const to = `stopped-${randomUUID()}@example.com`;
  const { reader, turnId } = await open(`web:${randomUUID()}`, {
    message: `Mail it ${call('send_email', { to, subject: 'Hi', body: 'Hello' })}`,
    preferred_agents: [toolAgent],
  });
  const required = await reader.until('hitl_required');
  expect(required).toMatchObject({ tool: 'send_email' });
  expect((await stop(turnId)).status).toBe(202);
  const events = await reader.rest();
  expect(events.find((event) => event.type === 'hitl_resolved')).toMatchObject({
    approved: false,
    by: expect.stringMatching(/^user:/),
    reason: 'the user stopped the turn',
  });
  expect(events.find((event) => event.type === 'tool' && event.status === 'done')).toMatchObject({
    tool: 'send_email',
    ok: false,
  });
  expect(events.at(-2)).toMatchObject({ type: 'cost', stop: 'cancelled' });
  const { rows } = await database.query(`select 1 from sent_mails where recipient = $1`, [to]);
  expect(rows).toEqual([]);
  // A decision after the stop finds nothing waiting.
  expect((await platform.agents(`/chat/approvals/${required!.id}/approve`, { method: 'POST', key })).status).toBe(409);
});

it('stops a running tool at once and makes no further model call', async () => {
  const { reader, turnId } = await open(`web:${randomUUID()}`, {
    message: `Spin ${call('code_execute', { language: 'javascript', code: 'for (;;) {}' })}`,
    preferred_agents: [toolAgent],
  });
  await reader.until((event) => event.type === 'tool' && event.status === 'calling');
  await platform.simulator.resetRequests();
  expect((await stop(turnId)).status).toBe(202);
  const events = await reader.rest();
  expect(events.find((event) => event.type === 'tool' && event.status === 'done')).toMatchObject({
    tool: 'code_execute',
    ok: false,
    result: 'code_execute: stopped by the user before it finished',
  });
  expect(events.at(-2)).toMatchObject({ type: 'cost', stop: 'cancelled' });
  expect((await platform.simulator.requests()).total).toBe(0);
  const { rows } = await database.query<{ status: string }>('select status from chat_turns where id = $1', [turnId]);
  expect(rows).toEqual([{ status: 'done' }]);
  expect(userId).toBeDefined();
});
