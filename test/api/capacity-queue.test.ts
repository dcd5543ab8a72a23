/**
 * The durable capacity queue (docs/capacity-queue.md) with the official `openai` SDK: background responses of an
 * account past its plan's concurrency wait `queued`, each told its place, and start as slots free, by priority
 * (`service_tier`) and then first come first served; a background response whose model's every provider is saturated
 * (429) is not failed but waits and completes once the provider answers again; the queue is on `/metrics`. Nothing is
 * lost and each is charged once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type OpenAI from 'openai';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { AgentStreamReader } from '../helpers/agent-stream.ts';
import { createCustomAgent } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let database: pg.Pool;

beforeAll(async () => {
  platform = await startTestPlatform();
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

type Tier = 'priority' | 'default' | 'flex';
const create = (client: OpenAI, input: string, tier: Tier = 'default', model = 'gpt-4o-mini') =>
  client.responses.create({
    model,
    input,
    background: true,
    max_output_tokens: 30,
    service_tier: tier,
  });

describe('the capacity queue', () => {
  it('holds an account’s jobs past its concurrency, tells each its place, and starts them in priority order', async () => {
    // A free account runs two background jobs at once (plans.yaml, queue.concurrency); each answer takes 6 s, long
    // enough for the queue to be read as it stands on a busy machine.
    await platform.simulator.addFault({ fault: { latency_ms: 6_000 } });
    try {
      const { key, user_id: userId } = await platform.createKey(undefined, 'free');
      const client = platform.openai(key);
      const running = [await create(client, 'First'), await create(client, 'Second')];
      await waitFor('the first two to run', async () => {
        const answers = await Promise.all(running.map((response) => client.responses.retrieve(response.id)));
        return answers.every((answer) => answer.status === 'in_progress');
      });
      // Three more: low, normal and high priority, in that order of arrival.
      const low = await create(client, 'Low', 'flex');
      const normal = await create(client, 'Normal');
      const high = await create(client, 'High', 'priority');
      const places = await waitFor('the three to be placed', async () => {
        const answers = (await Promise.all(
          [high, normal, low].map((response) => client.responses.retrieve(response.id)),
        )) as Array<OpenAI.Responses.Response & { queue_position?: number }>;
        const positions = answers.map((answer) => answer.queue_position);
        // The three are read at once, each possibly just before a later one's row is in: a read with two on the same
        // place saw the queue mid-way and is read again.
        const placed = answers.every((answer) => answer.status === 'queued') && positions.every(Boolean);
        return placed && new Set(positions).size === positions.length ? positions : null;
      });
      expect(places).toEqual([1, 2, 3]);

      // Waiting is in the operator console's API and on /metrics.
      const queue = (await (await platform.agents('/admin/api/queue', { key: platform.masterKey })).json()) as {
        groups: Array<{ kind: string; priority: string; plan: string; waiting: number; holding: number }>;
      };
      expect(queue.groups).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: 'response', priority: 'high', plan: 'free', waiting: 1 }),
          expect.objectContaining({ kind: 'response', priority: 'normal', plan: 'free', waiting: 1, holding: 2 }),
        ]),
      );
      const metrics = await (await platform.fetch('/metrics')).text();
      expect(metrics).toMatch(
        /tessera_capacity_queue_waiting\{kind="response",model="gpt-4o-mini",priority="low",plan="free"\} 1/,
      );
      expect(metrics).toMatch(/tessera_capacity_queue_holding\{[^}]*plan="free"\} 2/);

      // Seen as they start (read from the rows: the free plan's hourly limit would not take polling through the API):
      // the high one first, then the normal one, then the low one.
      const started = new Map<string, number>();
      const ids = [...running, low, normal, high].map((response) => response.id);
      await waitFor(
        'every response to complete',
        async () => {
          const { rows } = await database.query<{ id: string; status: string }>(
            'select id, status from model_responses where id = any($1)',
            [ids],
          );
          for (const row of rows) {
            if (row.status !== 'queued' && !started.has(row.id)) started.set(row.id, performance.now());
          }
          return rows.length === ids.length && rows.every((row) => row.status === 'completed');
        },
        60_000,
      );
      expect(started.get(high.id)!).toBeLessThanOrEqual(started.get(normal.id)!);
      expect(started.get(normal.id)!).toBeLessThan(started.get(low.id)!);

      // Each charged once; no place or slot left behind.
      const settled = await database.query<{ workflow_id: string }>(
        `select workflow_id from credit_ledger where user_id = $1 and kind = 'settle'`,
        [userId],
      );
      expect(settled.rows.map((row) => row.workflow_id).sort()).toEqual(ids.map((id) => `completion-${id}`).sort());
      // Each job gives its slot back as its workflow ends (just after its answer is recorded).
      await waitFor('every slot to be given back', async () => {
        const left = await database.query('select 1 from capacity_waiters where user_id = $1', [userId]);
        return left.rowCount === 0;
      });
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('waits out a saturated model instead of failing, and completes when it answers again', async () => {
    // Every provider of the model answers 429.
    await platform.simulator.addFault({ fault: { status: 429 } });
    const { key, user_id: userId } = await platform.createKey();
    const client = platform.openai(key);
    try {
      const response = await create(client, 'Patient');
      await waitFor('the model to be marked saturated', async () => {
        const marked = await database.query('select 1 from capacity_models where model = $1', ['gpt-4o-mini']);
        return (marked.rowCount ?? 0) > 0;
      });
      const waiting = await client.responses.retrieve(response.id);
      expect(['queued', 'in_progress']).toContain(waiting.status);
      await platform.simulator.clearFaults();
      const done = await waitFor(
        'the response to complete',
        async () => {
          const answer = await client.responses.retrieve(response.id);
          return answer.status === 'completed' || answer.status === 'failed' ? answer : null;
        },
        120_000,
      );
      expect(done.status).toBe('completed');
      expect(done.output_text).toContain('Patient');
      // The answer cleared the model's mark.
      await waitFor('the model to be cleared', async () => {
        const marked = await database.query('select 1 from capacity_models where model = $1', ['gpt-4o-mini']);
        return marked.rowCount === 0;
      });
      const settled = await database.query(`select 1 from credit_ledger where user_id = $1 and kind = 'settle'`, [
        userId,
      ]);
      expect(settled.rowCount).toBe(1);
      const held = await database.query<{ held: number }>('select credits_held as held from users where id = $1', [
        userId,
      ]);
      expect(Number(held.rows[0]!.held)).toBe(0);
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('lets a synchronous request wait for capacity up to the bound it names, and answers at once without it', async () => {
    await platform.simulator.addFault({ fault: { status: 429 } });
    const { key } = await platform.createKey();
    const client = platform.openai(key);
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Waited for' }], max_tokens: 20 };
    try {
      // Without the header: the saturation is the answer, at once.
      const refused = await client.chat.completions.create(body).catch((error: unknown) => error);
      expect(refused).toMatchObject({ status: expect.any(Number) });
      expect([429, 502]).toContain((refused as { status: number }).status);

      await platform.simulator.resetRequests();
      const waited = client.chat.completions.create(body, { headers: { 'X-Tessera-Capacity-Wait': '30' } });
      // The first round met the 429s; the provider answers again while the request waits.
      await waitFor('the first round to be refused', async () => (await platform.simulator.requests()).total > 0);
      await platform.simulator.clearFaults();
      const answer = await waited;
      expect(answer.choices[0]!.message.content).toContain('Waited for');

      const bad = await platform.fetch('/v1/chat/completions', {
        method: 'POST',
        key,
        headers: { 'x-tessera-capacity-wait': '600' },
        body: JSON.stringify(body),
      });
      expect(bad.status).toBe(400);
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('shows an automation run that waits for a slot as queued with its place, then runs it', async () => {
    // The responses (a Gemini model) answer slowly; the run (an agent of the account's on an OpenAI model) at once.
    await platform.simulator.addFault({ match: { protocol: 'gemini' }, fault: { latency_ms: 8_000 } });
    try {
      const { key, user_id: userId } = await platform.createKey(undefined, 'free');
      const client = platform.openai(key);
      const agentId = await createCustomAgent(platform, key, {
        name: 'Reporter',
        description: 'Reports what it is told',
        system_prompt: 'You report briefly.',
        model: 'gpt-4o-mini',
      });
      await create(client, 'Slow one', 'default', 'gemini-2.5-flash');
      await create(client, 'Slow two', 'default', 'gemini-2.5-flash');
      await waitFor('both slots to be taken', async () => {
        const { rows } = await database.query(
          'select 1 from capacity_waiters where user_id = $1 and granted_at is not null',
          [userId],
        );
        return rows.length === 2;
      });
      // The trigger waits for its run (up to AUTOMATION_SYNC_WAIT): read while it waits.
      const triggered = platform.agents('/automation/trigger', {
        method: 'POST',
        key,
        body: JSON.stringify({ agent_id: agentId, message: 'Report the queue' }),
      });
      const runId = await waitFor('the run to wait in the queue', async () => {
        const { rows } = await database.query<{ id: string }>(
          `select r.id from webhook_runs r join capacity_waiters w on w.holder = r.turn_id
           where r.user_id = $1 and w.kind = 'webhook-run' and w.granted_at is null`,
          [userId],
        );
        return rows[0]?.id;
      });
      const waiting = await platform.agents(`/webhook/runs/${encodeURIComponent(runId)}`, { key });
      expect(await waiting.json()).toMatchObject({ id: runId, status: 'queued', queue_position: 1 });
      // Another user's key does not find it.
      const { key: otherKey } = await platform.createKey(undefined, 'free');
      expect((await platform.agents(`/webhook/runs/${encodeURIComponent(runId)}`, { key: otherKey })).status).toBe(404);
      // As a response ends its slot frees, and the run goes on to its answer.
      const answered = await triggered;
      expect(answered.status).toBe(200);
      expect(await answered.json()).toMatchObject({ id: runId, status: 'done' });
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('makes an agent loop wait between iterations while its account’s slots are taken, then go on', async () => {
    // The responses (a Gemini model) answer slowly; the loop (an agent of the account's on an OpenAI model) at once.
    await platform.simulator.addFault({ match: { protocol: 'gemini' }, fault: { latency_ms: 8_000 } });
    try {
      const { key, user_id: userId } = await platform.createKey(undefined, 'free');
      const client = platform.openai(key);
      const agentId = await createCustomAgent(platform, key, {
        name: 'Stepper',
        description: 'Works in steps',
        system_prompt: 'You work step by step.',
        model: 'gpt-4o-mini',
      });
      // Two slow background responses take the free account's two slots.
      const holding = [
        await create(client, 'Slow one', 'default', 'gemini-2.5-flash'),
        await create(client, 'Slow two', 'default', 'gemini-2.5-flash'),
      ];
      await waitFor('both slots to be taken', async () => {
        const { rows } = await database.query(
          'select 1 from capacity_waiters where user_id = $1 and granted_at is not null',
          [userId],
        );
        return rows.length === 2;
      });
      const response = await platform.agents(`/chat/loop/web:${randomUUID()}`, {
        method: 'POST',
        key,
        body: JSON.stringify({ message: 'Draft it step by step [[iterations 2]]', agent_id: agentId }),
      });
      expect(response.status).toBe(200);
      const loop = new AgentStreamReader(response);
      expect(await loop.until('iteration')).toMatchObject({ iteration: 1, marker: 'continue' });
      // Between its iterations the loop waits for a slot, in the queue.
      await waitFor('the loop to wait in the queue', async () => {
        const { rows } = await database.query(
          `select 1 from capacity_waiters where user_id = $1 and kind = 'agent-loop' and granted_at is null`,
          [userId],
        );
        return rows.length === 1;
      });
      // As a response ends its slot frees, and the loop goes on to its end.
      expect(await loop.until('iteration')).toMatchObject({ iteration: 2, marker: 'done', stop: 'done' });
      await loop.rest();
      const { rows } = await database.query<{ status: string }>(
        'select status from model_responses where id = any($1)',
        [holding.map((held) => held.id)],
      );
      expect(rows.some((row) => row.status === 'completed')).toBe(true);
      await waitFor('every slot to be given back', async () => {
        const left = await database.query('select 1 from capacity_waiters where user_id = $1', [userId]);
        return left.rowCount === 0;
      });
    } finally {
      await platform.simulator.clearFaults();
    }
  });
});
