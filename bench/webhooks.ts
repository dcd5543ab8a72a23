/**
 * `npm run bench:webhooks`: inbound webhook deliveries on `npm start` as shipped (the setup of bench/shipped-run.ts:
 * the provider simulator in its own process as the only provider, nothing else changed; `npm start` makes its own
 * TOKEN_ENCRYPTION_KEY, which webhooks need), the load from this process.
 *
 * 1. Time to 202: `POST /webhook/general?hook=…` from 1 and then 16 concurrent senders, each delivery a fresh
 *    Standard Webhooks message signed by the bench (the `standardwebhooks` library, as a sender would), so every
 *    one is accepted: verified, recorded, its run started, `202` with the run id. Beside it `GET /health` at the
 *    same concurrency in the same run (the HTTP stack alone). Accepted deliveries per second, p50, p95 and p99.
 *    Between phases the bench waits until every run has ended, so one phase's runs do not load the next.
 * 2. Delivery to answer: K deliveries, one sender at a time and then K together, each followed by its own client
 *    polling `GET /webhook/runs/{id}` every 20 ms until `done`: from the delivery's send to the answer read (the run
 *    prepared on the agent service's queue, the agent's turn with its one model call, the answer recorded), and the
 *    run's own time on the server (`created_at` to `finished_at` of its row).
 *
 * Writes bench/webhooks-results.md. BENCH_QUICK=1 runs a fraction of each phase (a smoke run, not figures).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createBenchAccount, type Platform } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { exchange, type Sample } from './http-client.ts';
import { percentile } from './load.ts';
import { failureLines, loadNotes, ms, reportLead, writeResults } from './report.ts';
import {
  firstFailureLines,
  measureCalls,
  measuredRow,
  waitForIdlePlatform,
  withShippedRun,
  type MeasuredRow,
} from './shipped-run.ts';

// Apart from the other benches' ports (and `npm start`'s defaults).
const ports = { upstream: 19080, shipped: 18030, temporal: 17303, postgres: 15502 };
const acceptPhases = [
  { clients: 1, requests: quick ? 10 : 150 },
  { clients: 16, requests: quick ? 32 : 400 },
];
const answerRuns = quick ? 4 : 30;
const answerPollMs = 20;

const log = benchLog('bench:webhooks');
const startedAt = Date.now();

interface AcceptRow extends MeasuredRow {
  p50: number;
  p95: number;
  p99: number;
}
interface AnswerRow {
  senders: number;
  n: number;
  /** Send to the answer read by the client. */
  client: number[];
  /** The run's row: created to finished. */
  server: number[];
}
const acceptRows: AcceptRow[] = [];
/** The machine's load average when each measured phase began (other work on the cores shows in the figures). */
const loads = loadNotes();
const noteLoad = loads.note;
const answerRows: AnswerRow[] = [];

interface Hook {
  url: string;
  secret: string;
}

/** One Standard Webhooks delivery to the hook, signed now; resolves with the timed sample (202 counts). */
function deliver(hook: Hook, keep?: (runId: string) => void): Promise<Sample> {
  const id = `msg_${randomUUID()}`;
  const at = new Date();
  const body = JSON.stringify({ event: 'order.created', order: { id, total: '19.90 EUR' } });
  return exchange(
    'POST',
    {
      url: hook.url,
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(hook.secret).sign(id, at, body),
      },
    },
    {
      body,
      okStatus: 202,
      expect: (answer) => {
        const runId = (JSON.parse(answer) as { run_id?: string }).run_id;
        if (runId && keep) keep(runId);
        return typeof runId === 'string';
      },
    },
  );
}

/** Waits until every webhook run of the platform has ended. */
async function untilRunsEnded(databaseUrl: string): Promise<void> {
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      const { rows } = await database.query<{ open: string; failed: string }>(
        `select count(*) filter (where status in ('queued', 'running')) as open,
                count(*) filter (where status = 'failed') as failed from webhook_runs`,
      );
      if (Number(rows[0]!.failed) > 0) throw new Error(`${rows[0]!.failed} webhook runs failed`);
      if (Number(rows[0]!.open) === 0) return;
      if (Date.now() > deadline) throw new Error(`${rows[0]!.open} webhook runs still open after 15 minutes`);
      await sleep(500);
    }
  } finally {
    await database.end();
  }
}

async function timeTo202(platform: Platform, hook: Hook, databaseUrl: string): Promise<void> {
  for (const { clients, requests } of acceptPhases) {
    await waitForIdlePlatform(platform, log);
    noteLoad(`time to 202, ${clients} sender(s)`);
    for (const [arm, call] of [
      ['GET /health', () => exchange('GET', { url: `${platform.agentsUrl}/health`, headers: {} })],
      ['POST /webhook/{agent_id}', () => deliver(hook)],
    ] as const) {
      const measured = await measureCalls(clients, requests, call);
      const times = measured.samples.map((sample) => sample.totalMs);
      const row: AcceptRow = {
        ...measuredRow(arm, clients, measured),
        p50: percentile(times, 50),
        p95: percentile(times, 95),
        p99: percentile(times, 99),
      };
      acceptRows.push(row);
      log(
        `  ${arm} × ${clients}: n=${row.n} errors=${row.errors} ${row.perSecond.toFixed(0)}/s p50=${ms(row.p50)} p99=${ms(row.p99)}${row.firstFailure ? ` (first failure: ${row.firstFailure})` : ''}`,
      );
    }
    log('  waiting for the accepted runs to end');
    await untilRunsEnded(databaseUrl);
  }
}

/** One delivery followed to its answer: the client's time from the send to reading `done`. */
async function deliveryToAnswer(platform: Platform, key: string, hook: Hook): Promise<{ runId: string; ms: number }> {
  const sentAt = performance.now();
  let runId = '';
  const sample = await deliver(hook, (id) => (runId = id));
  if (!sample.ok) throw new Error(`delivery refused: ${sample.failure}`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const response = await fetch(`${platform.agentsUrl}/webhook/runs/${encodeURIComponent(runId)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const view = (await response.json()) as { status?: string; error?: string };
    if (view.status === 'done') return { runId, ms: performance.now() - sentAt };
    if (view.status === 'failed') throw new Error(`run ${runId} failed: ${view.error}`);
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${view.status}`);
    await sleep(answerPollMs);
  }
}

async function answers(platform: Platform, key: string, hook: Hook, databaseUrl: string): Promise<void> {
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    for (const senders of [1, answerRuns]) {
      await waitForIdlePlatform(platform, log);
      noteLoad(`delivery to answer, ${senders} sender(s)`);
      const followed: Array<{ runId: string; ms: number }> = [];
      if (senders === 1) {
        for (let index = 0; index < answerRuns; index++) followed.push(await deliveryToAnswer(platform, key, hook));
      } else {
        followed.push(
          ...(await Promise.all(Array.from({ length: senders }, () => deliveryToAnswer(platform, key, hook)))),
        );
      }
      const { rows } = await database.query<{ ms: number }>(
        `select extract(epoch from finished_at - created_at) * 1000 as ms from webhook_runs where id = any($1)`,
        [followed.map((run) => run.runId)],
      );
      const row = {
        senders,
        n: followed.length,
        client: followed.map((run) => run.ms),
        server: rows.map((serverRow) => Number(serverRow.ms)),
      };
      answerRows.push(row);
      log(
        `  ${senders} sender(s): answer read p50=${ms(percentile(row.client, 50))} p99=${ms(percentile(row.client, 99))}, run p50=${ms(percentile(row.server, 50))}`,
      );
    }
  } finally {
    await database.end();
  }
}

function acceptTable(): string {
  const lines = [
    '| senders | arm | n | errors | accepted/s | **p50** | p95 | p99 | added p50 / p99 |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of acceptRows) {
    const direct = acceptRows.find((other) => other.clients === row.clients && other.arm === 'GET /health')!;
    const added = row === direct ? '—' : `${ms(row.p50 - direct.p50)} / ${ms(row.p99 - direct.p99)}`;
    lines.push(
      `| ${row.clients} | ${row.arm} | ${row.n} | ${row.errors} | ${row.perSecond.toFixed(0)} | **${ms(row.p50)}** | ` +
        `${ms(row.p95)} | ${ms(row.p99)} | ${added} |`,
    );
  }
  lines.push(...firstFailureLines(acceptRows));
  return lines.join('\n');
}

function answerTable(): string {
  const lines = [
    '| senders | runs | **delivery to answer read** p50 / p95 / p99 | run on the server (row created to finished) p50 / p95 / p99 |',
    '|---:|---:|---:|---:|',
  ];
  const triple = (values: number[]) =>
    `${ms(percentile(values, 50))} / ${ms(percentile(values, 95))} / ${ms(percentile(values, 99))}`;
  for (const row of answerRows) {
    lines.push(`| ${row.senders} | ${row.n} | **${triple(row.client)}** | ${triple(row.server)} |`);
  }
  return lines.join('\n');
}

async function writeReport(failure: string | undefined): Promise<void> {
  await writeResults(
    'webhooks-results.md',
    'Tessera inbound webhooks benchmark',
    [
      reportLead() +
        '`npm run bench:webhooks`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, the ' +
        'API with its in-process worker, the background worker) in its own processes, data directory and ports, ' +
        'with the provider simulator in its own process as its only provider; a business account whose limits are ' +
        'far above the load owns a standard webhook of the `general` agent. Load from the bench process over ' +
        'node:http keep-alive, everything on the same cores. Times in ms.',
      '',
      '## Time to 202: a signed delivery accepted',
      '',
      'Each delivery is a new Standard Webhooks message (its own `webhook-id`) signed by the bench: the agent ' +
        'service reads the body, looks the webhook up and decrypts its secret, verifies the signature and the ' +
        'timestamp, counts the run against the owner’s plan limits, records it and starts its workflow (eagerly, ' +
        'in the API process), then answers `202` with the run id. Meanwhile the runs accepted before are being ' +
        'answered on the same cores. `GET /health` at the same concurrency is the HTTP stack alone; "added" is ' +
        'against it. After each concurrency the bench waited for every run to end.',
      '',
      acceptRows.length ? acceptTable() : 'Not measured (the run stopped before).',
      '',
      '## Delivery to the agent’s answer',
      '',
      `${answerRuns} deliveries one after another (one sender), then ${answerRuns} at once, each followed by its ` +
        `own client reading \`GET /webhook/runs/{id}\` every ${answerPollMs} ms until \`done\`: from the send to ` +
        'the answer read, and the run on the server (its row created, to its last record): the run prepared on the ' +
        "agent service's queue (the owner's turn, credits held), the `general` agent's turn (one model call to the " +
        'simulator, memories loaded, the answer stored, credits settled), the answer recorded.',
      '',
      answerRows.length ? answerTable() : 'Not measured (the run stopped before).',
      '',
      ...loads.lines(),
      ...failureLines(failure),
    ],
    { startedAt, log },
  );
}

const failure = await withShippedRun({ name: 'bench-webhooks', ports, log }, async ({ platform, databaseUrl }) => {
  const { key } = await createBenchAccount(platform);
  const created = await fetch(`${platform.agentsUrl}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: 'general' }),
  });
  if (created.status !== 201) throw new Error(`POST /webhooks: ${created.status} ${await created.text()}`);
  const hook = (await created.json()) as Hook;
  log('time to 202');
  await timeTo202(platform, hook, databaseUrl);
  log('delivery to answer');
  await answers(platform, key, hook, databaseUrl);
});
await writeReport(failure);
endBench(failure ? 1 : 0);
