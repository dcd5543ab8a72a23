/**
 * `npm run bench:media`: asynchronous media jobs on `npm start` as shipped, with Replicate played by the provider
 * simulator in its own process (REPLICATE_API_TOKEN and REPLICATE_BASE_URL point at it; nothing else changes), the
 * load from this process (the setup of bench/shipped-run.ts).
 *
 * 1. Submit latency: `POST /api/v1/media/video` (a 5 s standard video; the price held, the row written, the
 *    `mediaVideo` workflow started, `202 queued`) from 1 and then 16 clients, beside `GET /health` at the same
 *    concurrency in the same run (the direct call: the HTTP stack and nothing else). Between phases the bench waits
 *    until every submitted job has ended, so one phase's jobs do not load the next.
 * 2. Completion delay: K videos submitted together, each a prediction whose run time (`[[takes …]]`) is spread
 *    evenly over one poll interval, each polled by its own client with `GET /api/v1/media/video/{id}` every 50 ms
 *    until it reads `completed`. The provider's completion is the simulator's `completed_at` for the prediction
 *    (Replicate's wire shape, read back through `GET /v1/predictions`; creation + run time, on this machine's clock).
 *    Per job: the job's own `completed_at` (the row's finish: the poll saw `succeeded`, the MP4 was downloaded and
 *    stored, the hold charged) and the moment a client first read `completed`, both after the provider's
 *    completion. The workflow waits `MEDIA_POLL_INTERVAL_MS` between polls, starting when the prediction was
 *    created, so the delay is the rest of the poll interval in which the prediction ended (between 0 and one
 *    interval; the bench prints that predicted part) plus the poll and the store. Run with the shipped interval, then
 *    with 1000 and 250 ms, each in a fresh `npm start` (the setting is read at start).
 *
 * Writes bench/media-results.md. BENCH_QUICK=1 runs a fraction of each phase (a smoke run, not figures).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { createBenchKey, type Platform } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { exchange, type Target } from './http-client.ts';
import { failureLines, ms, reportLead, writeResults } from './report.ts';
import {
  figures,
  firstFailureLines,
  measureLatency,
  waitForIdlePlatform,
  withShippedRun,
  type LatencyRow,
} from './shipped-run.ts';
import { readSettings } from '../config/settings.ts';

// Apart from the other benches' ports (and `npm start`'s defaults).
const ports = { upstream: 19060, shipped: 18050, temporal: 17283, postgres: 15482 };
const shippedIntervalMs = readSettings({ DATABASE_URL: 'postgres://unused' }).MEDIA_POLL_INTERVAL_MS;
/** Smaller settings of MEDIA_POLL_INTERVAL_MS, each in a fresh `npm start`. */
const smallIntervalsMs = [1_000, 250];
const submitPhases = [
  { clients: 1, requests: quick ? 10 : 150 },
  { clients: 16, requests: quick ? 32 : 400 },
];
const delayJobs = quick ? 4 : 16;
const delayRounds = quick ? 1 : 2;
const clientPollMs = 50;
/** The shortest prediction of the delay phase: long enough for the create to be done well before it ends. */
const minRunMs = 1_000;

const log = benchLog('bench:media');

interface DelayRow {
  runMs: number;
  /** ms after the provider's completion. */
  predicted: number;
  jobCompleted: number;
  clientSaw: number;
}

interface DelayRun {
  intervalMs: number;
  rows: DelayRow[];
  /** Every poll timer of the jobs' workflows: how long after it started it fired (Temporal's history). */
  timersMs: number[];
}

const startedAt = Date.now();
const submitRows: LatencyRow[] = [];
const delayRuns: DelayRun[] = [];
let failure: string | undefined;

const replicate = { REPLICATE_API_TOKEN: 'bench', REPLICATE_BASE_URL: `http://127.0.0.1:${ports.upstream}` };

function target(platform: Platform, path: string, key?: string): Target {
  return { url: `${platform.url}${path}`, headers: key ? { authorization: `Bearer ${key}` } : {} };
}

const queued = (body: string) => {
  try {
    const parsed = JSON.parse(body) as { status?: string; video_id?: string };
    return parsed.status === 'queued' && typeof parsed.video_id === 'string';
  } catch {
    return false;
  }
};

/** Waits until every media job of the run has ended (a phase's jobs are polled and stored after it). */
async function untilJobsEnded(databaseUrl: string): Promise<void> {
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    const deadline = Date.now() + 10 * 60_000;
    for (;;) {
      const { rows } = await database.query<{ open: string; failed: string }>(
        `select count(*) filter (where status in ('queued', 'processing')) as open,
                count(*) filter (where status = 'failed') as failed from media_jobs`,
      );
      if (Number(rows[0]!.failed) > 0) throw new Error(`${rows[0]!.failed} media jobs failed`);
      if (Number(rows[0]!.open) === 0) return;
      if (Date.now() > deadline) throw new Error(`${rows[0]!.open} media jobs still open after 10 minutes`);
      await sleep(500);
    }
  } finally {
    await database.end();
  }
}

async function submitLatency(platform: Platform, key: string, databaseUrl: string): Promise<void> {
  const health = target(platform, '/health');
  const video = target(platform, '/api/v1/media/video', key);
  const body = JSON.stringify({ prompt: 'a bench video [[takes 1s]]', duration: 5 });
  for (const { clients, requests } of submitPhases) {
    await waitForIdlePlatform(platform, log);
    for (const [arm, call] of [
      ['GET /health', () => exchange('GET', health)],
      ['POST /api/v1/media/video', () => exchange('POST', video, { body, okStatus: 202, expect: queued })],
    ] as const) {
      submitRows.push(await measureLatency(arm, clients, requests, call, log));
    }
    log(`  waiting for the submitted jobs to end (${shippedIntervalMs} ms between polls)`);
    await untilJobsEnded(databaseUrl);
  }
}

interface PredictionView {
  id: string;
  input: { prompt?: string };
  created_at: string;
  completed_at?: string;
}

/** Every prediction the simulator made, through Replicate's list. */
async function predictions(): Promise<PredictionView[]> {
  const all: PredictionView[] = [];
  for (let next: string | null = `${replicate.REPLICATE_BASE_URL}/v1/predictions`; next !== null;) {
    const response = await fetch(next, { headers: { authorization: 'Bearer bench' } });
    if (!response.ok) throw new Error(`GET /v1/predictions: ${response.status}`);
    const page = (await response.json()) as { next: string | null; results: PredictionView[] };
    all.push(...page.results);
    next = page.next;
  }
  return all;
}

/** Submits one video and polls it until it ends; returns the moment a client first read `completed`. */
async function watchVideo(
  platform: Platform,
  key: string,
  job: { runMs: number; prompt: string },
  intervalMs: number,
): Promise<{ id: string; seenAt: number; completedAt: number }> {
  const submittedAt = Date.now();
  const response = await fetch(`${platform.url}/api/v1/media/video`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: job.prompt, duration: 5 }),
  });
  if (response.status !== 202) throw new Error(`POST /api/v1/media/video: ${response.status}`);
  const { video_id: id } = (await response.json()) as { video_id: string };
  const read = target(platform, `/api/v1/media/video/${id}`, key);
  let view: { status?: string; completed_at?: string; error?: string } = {};
  // The provider cannot be done before the run time has passed since the submit: until then a status check a
  // second (a client watching progress), then every 50 ms, so the checks do not load the machine they measure.
  const tightFrom = submittedAt + job.runMs - clientPollMs;
  const deadline = submittedAt + job.runMs + intervalMs * 3 + 60_000;
  for (;;) {
    const sample = await exchange('GET', read, {
      expect: (body) => {
        view = JSON.parse(body) as typeof view;
        return true;
      },
    });
    const seenAt = Date.now();
    if (!sample.ok) throw new Error(`GET video ${id}: ${sample.failure}`);
    if (view.status === 'completed') return { id, seenAt, completedAt: Date.parse(view.completed_at!) };
    if (view.status === 'failed') throw new Error(`video ${id} failed: ${view.error}`);
    if (seenAt > deadline) throw new Error(`video ${id} still ${view.status}`);
    await sleep(seenAt < tightFrom ? Math.min(1_000, tightFrom - seenAt) : clientPollMs);
  }
}

/** How long after it started each timer of these workflows fired, from their histories (the server's clock). */
async function pollTimers(workflowIds: string[]): Promise<number[]> {
  const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
  try {
    const client = new Client({ connection });
    const timers: number[] = [];
    for (const workflowId of workflowIds) {
      const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const at = (event: (typeof events)[number]) =>
        Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
      const started = new Map<string, number>();
      for (const event of events) {
        if (event.timerStartedEventAttributes) started.set(String(event.eventId), at(event));
        const fired = event.timerFiredEventAttributes;
        const startedAt = fired ? started.get(String(fired.startedEventId)) : undefined;
        if (startedAt !== undefined) timers.push(at(event) - startedAt);
      }
    }
    return timers;
  } finally {
    await connection.close();
  }
}

/**
 * The delay phase: a warm-up video (the store path's first run in fresh processes), then rounds of K videos whose
 * predictions end at points spread evenly over one poll interval (at least a second).
 */
async function completionDelay(platform: Platform, key: string, intervalMs: number): Promise<void> {
  const runId = randomBytes(4).toString('hex');
  await watchVideo(platform, key, { runMs: 0, prompt: `bench warm-up ${runId} [[takes 0ms]]` }, intervalMs);
  // Over at least a second: shorter poll timers fire after about a second anyway (the timers column shows it), so a
  // short interval is sampled over the cycle it really has.
  const spreadMs = Math.max(intervalMs, 1_000);
  const rows: DelayRow[] = [];
  const workflowIds: string[] = [];
  for (let round = 0; round < delayRounds; round++) {
    await waitForIdlePlatform(platform, log);
    const jobs = Array.from({ length: delayJobs }, (_, index) => {
      // Each round offset by half a step, so the rounds together sample the interval twice as finely.
      const runMs = minRunMs + Math.round(((index + (round + 0.5) / delayRounds) * spreadMs) / delayJobs);
      return { runMs, prompt: `bench delay ${runId} ${round}.${index} [[takes ${runMs}ms]]` };
    });
    const watched = await Promise.all(
      jobs.map(async (job) => ({ ...job, ...(await watchVideo(platform, key, job, intervalMs)) })),
    );
    const byPrompt = new Map((await predictions()).map((prediction) => [prediction.input.prompt, prediction]));
    for (const job of watched) {
      workflowIds.push(`media-video-${job.id}`);
      const prediction = byPrompt.get(job.prompt);
      if (!prediction?.completed_at) throw new Error(`no completed prediction for ${job.prompt}`);
      const providerDone = Date.parse(prediction.completed_at);
      rows.push({
        runMs: job.runMs,
        predicted: intervalMs * Math.ceil(job.runMs / intervalMs) - job.runMs,
        jobCompleted: job.completedAt - providerDone,
        clientSaw: job.seenAt - providerDone,
      });
    }
  }
  const timersMs = await pollTimers(workflowIds);
  delayRuns.push({ intervalMs, rows, timersMs });
  for (const row of rows) {
    log(`    run ${row.runMs} ms: predicted ${row.predicted}, job ${row.jobCompleted}, client ${row.clientSaw}`);
  }
  const summary = figures(rows.map((row) => row.clientSaw));
  log(
    `  interval ${intervalMs} ms: client saw completed p50=${ms(summary.p50)} p95=${ms(summary.p95)} after the provider`,
  );
}

function submitTable(): string {
  const lines = [
    '| clients | arm | n | errors | **p50** | p95 | added p50 / p95 | ratio p50 / p95 | requests/s |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of submitRows) {
    const direct = submitRows.find((other) => other.clients === row.clients && other.arm === 'GET /health')!;
    const isDirect = row === direct;
    const added = `${ms(row.latency.p50 - direct.latency.p50)} / ${ms(row.latency.p95 - direct.latency.p95)}`;
    const ratio = `${(row.latency.p50 / direct.latency.p50).toFixed(1)}× / ${(row.latency.p95 / direct.latency.p95).toFixed(1)}×`;
    lines.push(
      `| ${row.clients} | ${row.arm} | ${row.n} | ${row.errors} | **${ms(row.latency.p50)}** | ${ms(row.latency.p95)} | ` +
        `${isDirect ? '—' : added} | ${isDirect ? '—' : ratio} | ${row.perSecond.toFixed(0)} |`,
    );
  }
  lines.push(...firstFailureLines(submitRows));
  return lines.join('\n');
}

function delayTable(): string {
  const lines = [
    '| `MEDIA_POLL_INTERVAL_MS` | jobs | predicted: rest of the interval, p50 / p95 / max | job `completed_at` p50 / p95 / max | **client read `completed`** p50 / p95 / max | client mean (interval / 2) | client max − interval | poll timers fired after p50 / max |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const run of delayRuns) {
    const triple = (values: number[]) => {
      const f = figures(values);
      return `${ms(f.p50)} / ${ms(f.p95)} / ${ms(Math.max(...values))}`;
    };
    const seen = run.rows.map((row) => row.clientSaw);
    const mean = seen.reduce((sum, value) => sum + value, 0) / Math.max(1, seen.length);
    lines.push(
      `| ${run.intervalMs} | ${run.rows.length} | ${triple(run.rows.map((row) => row.predicted))} | ` +
        `${triple(run.rows.map((row) => row.jobCompleted))} | **${triple(seen)}** | ` +
        `${ms(mean)} (${ms(run.intervalMs / 2)}) | ${ms(Math.max(...seen) - run.intervalMs)} | ` +
        `${ms(figures(run.timersMs).p50)} / ${ms(Math.max(...run.timersMs))} |`,
    );
  }
  return lines.join('\n');
}

async function writeReport(): Promise<void> {
  await writeResults(
    'media-results.md',
    'Tessera media jobs benchmark',
    [
      reportLead() +
        '`npm run bench:media`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, the API ' +
        'with its in-process worker, the background worker) in its own processes, data directory and ports, with a ' +
        'metered business key; Replicate played by the provider simulator in its own process ' +
        '(`REPLICATE_API_TOKEN`, `REPLICATE_BASE_URL`); load: from the bench process over node:http keep-alive, ' +
        'everything on the same cores. Times in ms.',
      '',
      '## Submit latency: `POST /api/v1/media/video` to `202 queued`',
      '',
      'A 5 s standard video (50 credits held, the row written, the `mediaVideo` workflow started), beside ' +
        '`GET /health` at the same concurrency in the same run: the HTTP stack alone. "Added" and "ratio" are ' +
        'against `GET /health`. After each concurrency the bench waited for every submitted job to end.',
      '',
      submitRows.length ? submitTable() : 'Not measured (the run stopped before).',
      '',
      '## Completion delay: the provider done to the job read `completed`',
      '',
      `${delayRounds} rounds of ${delayJobs} videos submitted together (after one warm-up video), their ` +
        `predictions' run times spread evenly over one poll interval or 1 s if longer (from ${minRunMs} ms on), each ` +
        'watched by its own client with `GET /api/v1/media/video/{id}`: once a second until the run time has passed since its ' +
        `submit (the provider cannot be done before), then every ${clientPollMs} ms. All figures are after the ` +
        "prediction's `completed_at` (the simulator's, in Replicate's wire shape): **job** is the job's own " +
        '`completed_at` (the poll saw `succeeded`, the MP4 was downloaded and stored, the hold charged), **client** ' +
        'when a client first read `completed`. The workflow creates the prediction, then sleeps ' +
        '`MEDIA_POLL_INTERVAL_MS` before each poll, so a prediction that ends at run time T is seen by the first ' +
        'poll after T: **predicted** is interval × ⌈T / interval⌉ − T, the rest of the interval in which it ended, ' +
        'as if the polls fell exactly on multiples of the interval from the creation (each poll cycle really takes ' +
        'the interval plus its own time: the create, the timer, the poll activity, so over several polls the grid ' +
        'slips later than that). The delay is therefore between 0 and one interval plus one cycle of work, about ' +
        'half an interval on average. The last column is how long after it started each poll timer of these jobs ' +
        "fired (the workflows' histories: `TimerStarted` to `TimerFired`), the floor of a poll cycle. The shipped " +
        `interval is ${shippedIntervalMs} ms.`,
      '',
      delayRuns.length ? delayTable() : 'Not measured (the run stopped before).',
      '',
      ...failureLines(failure),
    ],
    { startedAt, log },
  );
}

failure = await withShippedRun(
  { name: 'bench-media', ports, environment: replicate, log },
  async ({ platform, databaseUrl }) => {
    const key = await createBenchKey(platform);
    log('submit latency');
    await submitLatency(platform, key, databaseUrl);
    log(`completion delay, shipped interval (${shippedIntervalMs} ms)`);
    await completionDelay(platform, key, shippedIntervalMs);
  },
);
// A new `npm start` (its own data directory) for each smaller interval: the setting is read at start.
for (const intervalMs of smallIntervalsMs) {
  if (failure) break;
  failure = await withShippedRun(
    {
      name: `bench-media-${intervalMs}`,
      ports,
      environment: { ...replicate, MEDIA_POLL_INTERVAL_MS: String(intervalMs) },
      log,
    },
    async ({ platform }) => {
      const key = await createBenchKey(platform);
      log(`completion delay, MEDIA_POLL_INTERVAL_MS=${intervalMs}`);
      await completionDelay(platform, key, intervalMs);
    },
  );
}
await writeReport();
endBench(failure ? 1 : 0);
