/**
 * `npm run bench:agents-durable`: the agent service's durable features on `npm start` as shipped, next to a direct
 * chat turn: what an A2A `message/send` round trip costs over the same turn streamed from `/chat/stream`, and how
 * long after its cron instant a scheduled task's turn shows its first token.
 *
 * The setup is bench:agents' (bench/shipped-run.ts): the provider simulator in its own process answering at once,
 * `npm start` in its own process tree, data directory and ports, a metered business key, the load from this process.
 * Two settings differ from the shipped defaults: `AGENT_IP_LIMIT_PER_MINUTE=0` (every request comes from one IP) and
 * `SCHEDULE_MIN_INTERVAL_SECONDS=2` (the default floor of 60 s would allow one firing a minute).
 *
 * 1. A2A round trip, N messages one after another, then N from 8 clients, each arm after the other in one run:
 *    - chat turn: `POST /chat/stream/{session_id}` (a new session each), timed from the request to `data: [DONE]`,
 *      the whole turn;
 *    - A2A: JSON-RPC v0.3 `message/send` on `POST /a2a` (blocking: the SDK's default; no contextId, so each message
 *      is a new context and a new task), plain JSON over node:http keep-alive (the client the chat arm uses, not the
 *      `@a2a-js/sdk` client, so neither arm pays a client library), timed to the final response: a task `completed`
 *      with a non-empty answer artifact.
 *    Both are routed (no agent named): the same work in the same order (the router's model call, then the agent's),
 *    so the difference is A2A's own (the SDK's request handler, the task's workflow `a2a-task-<id>`, the task store).
 * 2. Schedule fire-to-first-token: one task with a 6-field cron firing every 2 s (`cron` below) for the built-in agent
 *    `general`, K + 1 firings (the first is a warm-up). For each firing, from the Temporal schedule (describe():
 *    recent actions, polled) its nominal instant (`scheduledAt`, the cron instant) and when the schedule took the
 *    action, the run workflow's and its `chatTurn` child's start times (workflow describe()), and from the stream
 *    journal (the embedded PostgreSQL's `stream_chunks`, `request_id` = the turn id) when the turn's `turn-start`
 *    and its first `text-delta` were written (`created_at`, the database's `now()` at the insert). The journal is
 *    written in batches (a flush 100 ms after the first event of a batch, or at the end of the model call): the
 *    first token's row is when it became durable, at most 100 ms after a live subscriber saw it; with the
 *    simulator answering at once, the whole answer ends within that and flushes at once. Temporal, PostgreSQL and
 *    this process read the same machine clock; the report gives the measured offset of the database's clock.
 *
 * Writes bench/agents-durable-results.md. BENCH_A2A_N sets N (default 100), BENCH_SCHEDULE_K sets K (default 30);
 * BENCH_QUICK=1 runs N = 5 and K = 3 (a smoke run).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { createBenchKey } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { post, postAgentChat, type Sample, type Target } from './http-client.ts';
import { addedCell, failureLines, ms, rateCell, ratioCell, reportLead, writeResults } from './report.ts';
import {
  figures,
  firstFailureLines,
  measureLatency,
  p50p95,
  waitForIdlePlatform,
  withShippedRun,
  type LatencyRow,
  type ShippedRun,
} from './shipped-run.ts';

const messages = quick ? 5 : Number(process.env.BENCH_A2A_N ?? 100);
const firings = quick ? 3 : Number(process.env.BENCH_SCHEDULE_K ?? 30);
// Apart from the other benches' ports (and `npm start`'s defaults).
const ports = { upstream: 19050, shipped: 18060, temporal: 17273, postgres: 15472 };
const prompt = 'Say hello to the benchmark in one short sentence.';
const cron = '*/2 * * * * *';
const cronPeriodMs = 2_000;

const log = benchLog('bench:agents-durable');

interface FiringRow {
  scheduledAt: number;
  /** ms after the cron instant. */
  taken: number;
  runStarted: number;
  turnStarted: number;
  turnStartJournaled: number;
  firstToken: number;
}

const startedAt = Date.now();
const phases: Array<{ title: string; rows: LatencyRow[] }> = [];
let schedule:
  { rows: FiringRow[]; skippedOverlap: number; clockOffsetMs: number; taskId: string; dropped: number } | undefined;
let failure: string | undefined;

/** A final answer to `message/send`: a task, completed, with a non-empty answer artifact. */
function completedTask(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as {
      result?: { kind?: string; status?: { state?: string }; artifacts?: Array<{ parts?: Array<{ text?: string }> }> };
    };
    const result = parsed.result;
    const answer = (result?.artifacts ?? []).flatMap((artifact) => artifact.parts ?? []).map((part) => part.text ?? '');
    return result?.kind === 'task' && result.status?.state === 'completed' && answer.join('').length > 0;
  } catch {
    return false;
  }
}

async function roundTrips({ platform }: ShippedRun, key: string): Promise<void> {
  const runId = randomBytes(4).toString('hex');
  let sessions = 0;
  const chatCall = () => {
    const sessionId = `bench-durable-${runId}-${(sessions += 1)}`;
    return postAgentChat(
      {
        url: `${platform.agentsUrl}/chat/stream/${encodeURIComponent(sessionId)}`,
        headers: { authorization: `Bearer ${key}` },
      },
      JSON.stringify({ message: prompt, session_id: sessionId }),
    );
  };
  const a2a: Target = { url: `${platform.agentsUrl}/a2a`, headers: { authorization: `Bearer ${key}` } };
  const a2aCall = () =>
    post(
      a2a,
      JSON.stringify({
        jsonrpc: '2.0',
        id: randomUUID(),
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: prompt }] },
        },
      }),
      false,
      completedTask,
    );
  const probe = await a2aCall();
  if (!probe.ok) throw new Error(`A2A message/send failed: ${probe.failure ?? `HTTP ${probe.status}`}`);
  for (const clients of [1, 8]) {
    const title = clients === 1 ? `${messages} messages, one after another` : `${messages} messages from 8 clients`;
    log(title);
    await waitForIdlePlatform(platform, log);
    const rows: LatencyRow[] = [];
    for (const [arm, call] of [
      ['chat turn (/chat/stream to [DONE])', chatCall],
      ['A2A message/send', a2aCall],
    ] as Array<[string, () => Promise<Sample>]>) {
      rows.push(await measureLatency(arm, clients, messages, call, log));
    }
    phases.push({ title, rows });
  }
}

async function scheduleFirings({ platform, ports: { temporal }, databaseUrl }: ShippedRun, key: string) {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${platform.agentsUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const connection = await Connection.connect({ address: `127.0.0.1:${temporal}` });
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    // The database's clock against this process's (same machine: expected ~0; the journal's times are the database's).
    const before = Date.now();
    const { rows: clock } = await database.query<{ at: number }>(
      'select extract(epoch from clock_timestamp()) * 1000 as at',
    );
    const clockOffsetMs = Number(clock[0]!.at) - (before + Date.now()) / 2;

    await waitForIdlePlatform(platform, log);
    const task = await call('POST', '/schedule/tasks', { cron, agent_id: 'general', message: prompt, enabled: true });
    const taskId = String(task.id);
    log(`task ${taskId} (${cron}): waiting for ${firings + 1} firings`);
    const client = new TemporalClient({ connection });
    const handle = client.schedule.getHandle(String(task.schedule_id));
    const actions = new Map<string, { scheduledAt: Date; takenAt: Date; runId: string }>();
    const deadline = Date.now() + (firings + 1) * cronPeriodMs + 60_000;
    let skippedOverlap = 0;
    while (actions.size < firings + 1) {
      if (Date.now() > deadline) throw new Error(`only ${actions.size} firings of ${taskId} before the deadline`);
      await sleep(3_000);
      const described = await handle.describe();
      skippedOverlap = described.info.numActionsSkippedOverlap;
      for (const action of described.info.recentActions) {
        if (action.action.type !== 'startWorkflow') continue;
        const { workflowId, firstExecutionRunId } = action.action.workflow;
        actions.set(workflowId, {
          scheduledAt: action.scheduledAt,
          takenAt: action.takenAt,
          runId: firstExecutionRunId,
        });
      }
    }
    await call('DELETE', `/schedule/tasks/${taskId}`);
    const ordered = [...actions.entries()].sort((a, b) => a[1].scheduledAt.getTime() - b[1].scheduledAt.getTime());
    const measured = ordered.slice(1, firings + 1);
    const rows: FiringRow[] = [];
    for (const [workflowId, action] of measured) {
      const run = client.workflow.getHandle(workflowId, action.runId);
      const result = (await run.result()) as { status: string; turnId: string | null };
      if (result.status !== 'done' || !result.turnId) throw new Error(`${workflowId}: ${JSON.stringify(result)}`);
      const runInfo = await run.describe();
      const turnInfo = await client.workflow.getHandle(result.turnId).describe();
      const { rows: journal } = await database.query<{ turn_start: Date | null; first_token: Date | null }>(
        `select min(created_at) filter (where data::jsonb->>'type' = 'turn-start') as turn_start,
                min(created_at) filter (where data::jsonb->>'type' = 'text-delta') as first_token
           from stream_chunks where request_id = $1`,
        [result.turnId],
      );
      const { turn_start: turnStart, first_token: firstToken } = journal[0]!;
      if (!turnStart || !firstToken) throw new Error(`turn ${result.turnId} has no journaled turn-start or token`);
      const nominal = action.scheduledAt.getTime();
      rows.push({
        scheduledAt: nominal,
        taken: action.takenAt.getTime() - nominal,
        runStarted: runInfo.startTime.getTime() - nominal,
        turnStarted: turnInfo.startTime.getTime() - nominal,
        turnStartJournaled: turnStart.getTime() - nominal,
        firstToken: firstToken.getTime() - nominal,
      });
    }
    for (const [index, row] of rows.entries()) {
      if (index > 0 && row.scheduledAt - rows[index - 1]!.scheduledAt !== cronPeriodMs) {
        log(`  note: firing ${index} is ${row.scheduledAt - rows[index - 1]!.scheduledAt} ms after the previous one`);
      }
    }
    schedule = { rows, skippedOverlap, clockOffsetMs, taskId, dropped: 1 };
    const delays = rows.map((row) => row.firstToken);
    log(
      `  fire → first token: n=${rows.length}${p50p95(figures(delays))} ` +
        `max=${ms(Math.max(...delays))} (database clock offset ${ms(clockOffsetMs)} ms)`,
    );
  } finally {
    await database.end().catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}

function roundTripTable(rows: LatencyRow[]): string {
  const base = rows[0]!.latency;
  const lines = [
    '| arm | n | errors | **p50** | p95 | **added p50** | added p95 | ratio p50 | ratio p95 | messages/s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [index, row] of rows.entries()) {
    const isBase = index === 0;
    const added = (value: number, of: number) => addedCell(value, of, isBase);
    const ratio = (value: number, of: number) => ratioCell(value, of, isBase);
    lines.push(
      `| ${row.arm} | ${row.n} | ${row.errors} | **${ms(row.latency.p50)}** | ${ms(row.latency.p95)} | ` +
        `**${added(row.latency.p50, base.p50)}** | ${added(row.latency.p95, base.p95)} | ` +
        `${ratio(row.latency.p50, base.p50)} | ${ratio(row.latency.p95, base.p95)} | ` +
        `${rateCell(row.perSecond)} |`,
    );
  }
  lines.push(...firstFailureLines(rows));
  return lines.join('\n');
}

function scheduleTable(rows: FiringRow[]): string {
  const stages: Array<[string, (row: FiringRow) => number]> = [
    ['the schedule took the action (`takenAt`)', (row) => row.taken],
    ['`scheduledRun` workflow started', (row) => row.runStarted],
    ['`chatTurn` child workflow started', (row) => row.turnStarted],
    ['`turn-start` journaled', (row) => row.turnStartJournaled],
    ['**first token journaled (first `text-delta`)**', (row) => row.firstToken],
  ];
  const lines = ['| after the cron instant | n | p50 | p95 | max |', '|---|---:|---:|---:|---:|'];
  for (const [name, pick] of stages) {
    const values = rows.map(pick);
    const { p50, p95 } = figures(values);
    lines.push(
      `| ${name} | ${values.length} | ${ms(p50)} | ${ms(p95)} | ` +
        `${ms(values.length ? Math.max(...values) : Number.NaN)} |`,
    );
  }
  return lines.join('\n');
}

async function writeReport(): Promise<void> {
  await writeResults(
    'agents-durable-results.md',
    'Tessera agent-service durable features: A2A and schedules',
    [
      reportLead() +
        '`npm run bench:agents-durable`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, ' +
        'the API serving the gateway and the agent service with its in-process worker, the background worker) in its ' +
        'own processes, data directory and ports, with a metered business key; two settings changed: ' +
        '`AGENT_IP_LIMIT_PER_MINUTE=0` (all the load comes from one IP) and `SCHEDULE_MIN_INTERVAL_SECONDS=2` (a task ' +
        'may fire every 2 s). Upstream: the provider simulator in its own process, answering at once; load: closed loop ' +
        'from the bench process over node:http keep-alive, everything on the same cores.',
      '',
      '## A2A `message/send` round trip against a direct chat turn',
      '',
      '**chat turn**: `POST /chat/stream/{session_id}`, a new session each, timed from the request to `data: [DONE]` ' +
        '(the whole turn). **A2A**: JSON-RPC v0.3 `message/send` on `POST /a2a` with the same message and the same key, ' +
        'blocking (the SDK default), no contextId (a new context and task each), sent as plain JSON over the same ' +
        'keep-alive client (not the `@a2a-js/sdk` client), timed to the response: a `completed` task with its answer. ' +
        'Both routed (no agent named), so both make the same two model calls. "Added" and "ratio" are against the chat ' +
        'turn in the same phase. Times in ms.',
      '',
      ...failureLines(failure),
      ...phases.flatMap((phase) => [`### ${phase.title}`, '', roundTripTable(phase.rows), '']),
      '## Schedule fire-to-first-token',
      '',
      ...(schedule
        ? [
            `One task, cron \`${cron}\` (every 2 s), agent \`general\`, the same message; ${schedule.rows.length} ` +
              `firings measured after ${schedule.dropped} warm-up firing. Times in ms after each firing's cron instant ` +
              "(Temporal's `scheduledAt`): the schedule's action and the workflows' start times from Temporal, the " +
              "journal rows' `created_at` from PostgreSQL (the first token's row is written at most 100 ms after the " +
              'token reached a live subscriber: the journal flushes a batch 100 ms after its first event or at the end ' +
              "of the model call, which with this upstream comes first). The database's clock read " +
              `${ms(schedule.clockOffsetMs)} ms from this process's; firings skipped for overlap: ` +
              `${schedule.skippedOverlap}.`,
            '',
            scheduleTable(schedule.rows),
            '',
          ]
        : ['Not measured (the run stopped before).', '']),
    ],
    { startedAt, log },
  );
}

let exitCode = 0;
if (![messages, firings].every((value) => Number.isInteger(value) && value >= 1)) {
  failure = 'BENCH_A2A_N and BENCH_SCHEDULE_K must be positive integers';
} else {
  failure = await withShippedRun(
    {
      name: 'bench-agents-durable',
      ports,
      environment: { AGENT_IP_LIMIT_PER_MINUTE: '0', SCHEDULE_MIN_INTERVAL_SECONDS: '2' },
      log,
    },
    async (run) => {
      const key = await createBenchKey(run.platform);
      await roundTrips(run, key);
      await scheduleFirings(run, key);
    },
  );
}
if (failure) exitCode = 1;
await writeReport();
endBench(exitCode);
