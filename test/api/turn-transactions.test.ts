/**
 * What one chat turn writes (issue 21): PostgreSQL write transactions per turn without tools, counted in the test's
 * own database by row triggers (test/helpers/write-transactions.ts), for the gateway's session chat and the agent
 * service's turns (routed by the model, and with a named agent). Each turn is measured from its request to the end of
 * its workflow, after a first turn of the same key and session, so what happens once (the session's creation, the
 * key's `last_used_at`) is measured apart.
 *
 * The budget: at most 4 write transactions per turn without tools (issue 21); a plain turn now takes 2, as a
 * completion does. Where they go: the turn's opening (rate limits, session, turn number, the user's message, the first
 * call's credit hold and the turn's start event, one transaction), and the model call (its journal, its settlement and,
 * when its answer ends the turn, the turn's close: messages, status and last event; one transaction when the answer
 * streams in under the journal's flush interval); a routed agent message adds the routing step (the classifier call's
 * settlement, the routed agent's credit hold and the `routed` event).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { callDirective } from '../helpers/agents.ts';
import { readSse } from '../helpers/sse.ts';
import { countWriteTransactions, type WriteCounter, type WriteTransaction } from '../helpers/write-transactions.ts';

let platform: TestPlatform;
let counter: WriteCounter;
let database: pg.Pool;
let temporal: Client;
let connection: Connection;
let key: string;
let userId: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  counter = await countWriteTransactions(platform.databaseUrl);
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 1 });
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
  temporal = new Client({ connection });
  ({ key, user_id: userId } = await platform.createKey());
});

afterAll(async () => {
  await counter?.close();
  await database?.end();
  await connection?.close();
  await platform?.close();
});

/**
 * The write transactions of `send` (a turn's request, answered with the turn's id), counted until the turn's workflow
 * has ended. A key's `last_used_at` (written at most once a minute per key, off the request's path) is not the turn's.
 */
async function measure(send: () => Promise<string>): Promise<WriteTransaction[]> {
  await counter.reset();
  const turnId = await send();
  await temporal.workflow.getHandle(turnId).result();
  const written = await counter.transactions();
  return written.filter((transaction) => !transaction.tables.every((table) => table === 'api_keys'));
}

async function sessionTurn(sessionId: string, stream = false): Promise<string> {
  const response = await platform.fetch(stream ? '/api/v1/chat/stream' : '/api/v1/chat', {
    method: 'POST',
    key,
    body: JSON.stringify({ message: 'Say hello in three words', session_id: sessionId }),
  });
  expect(response.status).toBe(200);
  if (stream) await readSse(response);
  else await response.json();
  return response.headers.get('x-turn-id')!;
}

async function agentTurn(path: string, body: Record<string, unknown>): Promise<string> {
  const response = await platform.agents(path, { method: 'POST', key, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  const text = await response.text();
  expect(text).toContain('"type":"cost"');
  return response.headers.get('x-turn-id')!;
}

const describeAll = (written: WriteTransaction[]) => written.map((transaction) => transaction.tables.join('+'));

describe('write transactions per turn without tools', () => {
  it('session chat: 2 per turn (at most 4), a new session or a reused one, streamed or not', async () => {
    const sessionId = `api:${randomUUID()}`;
    await platform.simulator.resetRequests();
    const first = await measure(() => sessionTurn(sessionId));
    const reused = await measure(() => sessionTurn(sessionId));
    const streamed = await measure(() => sessionTurn(sessionId, true));
    const fresh = await measure(() => sessionTurn(`api:${randomUUID()}`, true));
    // One upstream call per turn: each turn's first call, started by the API beside the turn's start, was adopted by
    // the workflow's model call rather than made again (workflows/turn-call.ts).
    expect((await platform.simulator.requests()).total).toBe(4);
    console.log(
      'session chat write transactions',
      JSON.stringify({
        first: describeAll(first),
        reused: describeAll(reused),
        streamed: describeAll(streamed),
        fresh: describeAll(fresh),
      }),
    );
    for (const written of [first, reused, streamed, fresh]) expect(describeAll(written).length).toBeLessThanOrEqual(2);
  });

  it('session chat with one calculator call: the tool adds its journal and the second call', async () => {
    const sessionId = `api:${randomUUID()}`;
    await measure(() => sessionTurn(sessionId));
    const message = `What is 2 + 3? ${callDirective('calculator', { expression: '2 + 3' })}`;
    const written = await measure(async () => {
      const response = await platform.fetch('/api/v1/chat', {
        method: 'POST',
        key,
        body: JSON.stringify({ message, session_id: sessionId }),
      });
      expect(((await response.json()) as { tool_calls: unknown[] }).tool_calls).toHaveLength(1);
      return response.headers.get('x-turn-id')!;
    });
    console.log('calculator turn write transactions', JSON.stringify(describeAll(written)));
    // The opening, the first call, the tool's start and result (each journalled as it happens), the second call's
    // hold, the second call with the close.
    expect(describeAll(written).length).toBeLessThanOrEqual(6);
  });

  it('agent service: 3 per turn routed by the model (at most 4), in one workflow', async () => {
    const sessionId = `web:${randomUUID()}`;
    await measure(() => agentTurn(`/chat/stream/${sessionId}`, { message: 'Please debug my python function' }));
    let turnId = '';
    await platform.simulator.resetRequests();
    const routed = await measure(async () => {
      turnId = await agentTurn(`/chat/stream/${sessionId}`, { message: 'Translate good morning into French' });
      return turnId;
    });
    console.log('routed agent turn write transactions', JSON.stringify({ routed: describeAll(routed) }));
    expect(describeAll(routed).length).toBeLessThanOrEqual(3);
    // One workflow for the message: the classifier's call was the turn's own first step (its trace's `routing`),
    // charged under the turn's id like its other calls, and no completion workflow was started for it.
    const trace = await temporal.workflow.getHandle(turnId).query<{ routing?: Record<string, unknown> }>('trace');
    expect(trace.routing).toMatchObject({ id: 'translator', method: 'model', call: { credits: expect.any(Number) } });
    const { rows } = await database.query<{ workflow_id: string; attempt: number; kind: string }>(
      `select workflow_id, attempt, kind from credit_ledger where user_id = $1 and workflow_id not like 'chat-%'`,
      [userId],
    );
    expect(rows).toEqual([]);
    // Two upstream calls: the classifier's (started beside the turn's start and adopted by its routing step, not made
    // twice) and the routed agent's answer (started by the routing step, which read the history and the memories in
    // its transaction, and adopted by the turn's model call).
    const requests = await platform.simulator.requests();
    expect(requests.total).toBe(2);
    // The agent's call read the history: the earlier turn of the session is in it.
    expect(JSON.stringify(requests.last)).toContain('Please debug my python function');
  });

  it('agent service: 2 per turn with a named agent (at most 4)', async () => {
    const sessionId = `web:${randomUUID()}`;
    const body = { message: 'Hello there', session_id: sessionId, agent_id: 'writer' };
    await measure(() => agentTurn('/api/v1/chat', body));
    await platform.simulator.resetRequests();
    const named = await measure(() => agentTurn('/api/v1/chat', body));
    // One upstream call: the API started it beside the turn's start, with the history and memories it read in the
    // turn's opening, and the turn's model call adopted it.
    expect((await platform.simulator.requests()).total).toBe(1);
    console.log('agent turn write transactions', JSON.stringify({ named: describeAll(named) }));
    expect(describeAll(named).length).toBeLessThanOrEqual(2);
  });
});
