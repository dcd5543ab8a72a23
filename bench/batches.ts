/**
 * `npm run bench:batches`: the Batch API (`POST /v1/files`, `POST /v1/batches`) beside the same requests sent as
 * synchronous completions at the same concurrency, on `npm start` as shipped (issue 28).
 *
 * As `npm run bench:doors` does (bench/doors.ts): the upstream is the provider simulator in its own process, here
 * answering after 300 ms; Tessera is `npm start` in its own processes, data directory and ports, with a metered
 * business key. One setting differs from the shipped ones: a plans file of the bench's own (PLANS_PATH, a copy of
 * config/plans.yaml) whose business plan runs 64 lines of a batch at once (128 shipped), so that the batch has as many
 * requests in flight as the synchronous arm has clients. The arms, on the same 10,000 requests (a chat completion of
 * `gpt-4o-mini`, max_tokens 50, each line its own message):
 * - direct: 64 closed-loop clients sending them to the simulator itself (the ceiling);
 * - sync: 64 closed-loop clients sending them as `POST /v1/chat/completions` (measureArm: a warm-up, then the 10,000);
 * - batch: the lines uploaded as one JSONL file, one batch created on it, read every 250 ms until `completed` (after a
 *   warm-up batch of 128 lines), its output file checked: every custom_id once, each a 200 with a completion.
 * The two Tessera arms run twice, in turns (sync, batch, then batch, sync), so the machine's drift hits both alike.
 * For both the CPU of every platform process is metered (for the batch from its creation to `completed` seen, the
 * reads of it included), and the RSS of the platform's processes read at the end of each arm; for the batch, the
 * history of its workflow (every run of `batch-<id>`: events and Temporal's history size) and how many requests the
 * upstream had in flight while it ran.
 *
 * Writes bench/batches-results.md. BENCH_QUICK=1: a smoke run (500 lines, one round).
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { parse, stringify } from 'yaml';
import { exchange, jsonAnswer, post, type Sample, type Target } from './http-client.ts';
import { createBenchKey, repositoryRoot, shippedProcesses, type Platform, type Upstream } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { measureArm, type MeasuredArm } from './measure.ts';
import {
  costTable,
  failureLines,
  loadNotes,
  memoryTable,
  ms,
  rateCell,
  reportLead,
  threadTable,
  writeResults,
  type ArmResult,
} from './report.ts';
import { memoryByRole, snapshot, total, usageBetween, type Role, type Usage } from './resources.ts';
import { waitForIdlePlatform, withShippedRun, type ShippedRun } from './shipped-run.ts';

// Apart from the other benches' ports (and `npm start`'s defaults), so they can share a machine.
const ports = { upstream: 19100, shipped: 18110, temporal: 17323, postgres: 15522 };

const model = 'gpt-4o-mini';
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'say hello to the benchmark in one short sentence.';
const lineCount = quick ? 500 : 10_000;
const warmUpLines = 128;
const clients = 64;
const upstreamMs = 300;
/** The two Tessera arms in each round, in turns. */
const rounds: Array<Array<'sync' | 'batch'>> = quick
  ? [['sync', 'batch']]
  : [
      ['sync', 'batch'],
      ['batch', 'sync'],
    ];
const pollMs = 250;
const goal = 0.95;

const log = benchLog('bench:batches');
const loads = loadNotes();
const plansPath = join(repositoryRoot, '.data', 'bench-batches-plans.yaml');

const requestBody = (line: number, name: string) => ({
  model: name,
  messages: [{ role: 'user', content: `Line ${line}: ${prompt}` }],
  max_tokens: 50,
});

/** The batch's input file: `count` lines, custom ids `<prefix>-1` … `<prefix>-<count>`. */
const inputFile = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, index) =>
    JSON.stringify({
      custom_id: `${prefix}-${index + 1}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: requestBody(index + 1, model),
    }),
  ).join('\n') + '\n';

const isCompletion = jsonAnswer<{ choices?: Array<{ message?: { content?: string } }> }>(
  (body) => !!body.choices?.[0]?.message?.content,
);

/** config/plans.yaml with the business plan's batch concurrency at the synchronous arm's clients. */
async function writePlans(): Promise<void> {
  const plans = parse(await readFile(join(repositoryRoot, 'config/plans.yaml'), 'utf8')) as {
    batches: { concurrency: Record<string, number> };
  };
  plans.batches.concurrency.business = clients;
  await mkdir(join(repositoryRoot, '.data'), { recursive: true });
  await writeFile(plansPath, stringify(plans));
}

interface BatchView {
  id: string;
  status: string;
  request_counts: { total: number; completed: number; failed: number };
  output_file_id: string | null;
  error_file_id: string | null;
  errors: unknown;
}

interface HistoryRun {
  runId: string;
  status: string;
  events: number;
  /** Temporal's own history size (bytes, as the server stores and limits it). */
  bytes: number;
  /** The history as `temporal workflow show -o json` prints it (payloads in base64). */
  jsonBytes: number;
  /** The lines in flight the run was started with (its input's `concurrency`). */
  concurrency: number | undefined;
}

interface HistoryFigures {
  runs: HistoryRun[];
  /** Runs of the workflow id that visibility lists (a cross-check of the walk through continue-as-new). */
  listed: number;
}

interface BatchResult {
  round: number;
  batchId: string;
  lines: number;
  completed: number;
  failed: number;
  /** Failures found in the output (or an error file), the first named. */
  outputFailure?: string;
  uploadSeconds: number;
  fileBytes: number;
  /** Seconds from the POST of the batch to what the reads saw: in_progress, every line counted, completed. */
  inProgressAt: number;
  linesDoneAt: number;
  completedAt: number;
  perSecond: number;
  usage: Usage;
  upstreamInFlight: { max: number; mean: number };
  upstreamCalls: number;
  workflowTasks: WorkflowTaskWarnings;
  history: HistoryFigures;
}

interface SyncResult {
  round: number;
  result: ArmResult;
  firstFailure?: string;
  /** Requests the simulator received during the measured load. */
  upstreamCalls: number;
  workflowTasks: WorkflowTaskWarnings;
}

/**
 * What the platform's log said of workflow tasks during an arm: tasks that ran over 5 s (the SDK's TMPRL1104), and
 * completions the server refused because the task had timed out meanwhile (it is then run again).
 */
interface WorkflowTaskWarnings {
  slow: number;
  lost: number;
}

const directResults: ArmResult[] = [];
const syncResults: SyncResult[] = [];
const batchResults: BatchResult[] = [];
const memoryRows: Array<{ label: string; rss: Map<Role, number>; pss: Map<Role, number> }> = [];

/** A JSON call to the gateway (setup and reads, not measured): the body, or an error naming the call. */
async function call<T>(platform: Platform, key: string, path: string, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (typeof init.body === 'string') headers['content-type'] = 'application/json';
  const response = await fetch(`${platform.url}${path}`, { ...init, headers });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return (path.endsWith('/content') ? text : JSON.parse(text)) as T;
}

const platformLog = join(repositoryRoot, '.data', 'bench-batches', 'logs', 'npm-start.log');

const logSize = async () => (await stat(platformLog).catch(() => ({ size: 0 }))).size;

/** Counts the workflow-task warnings the platform logged since the log had `from` bytes. */
async function workflowTaskWarnings(from: number): Promise<WorkflowTaskWarnings> {
  const text = (await readFile(platformLog).catch(() => Buffer.alloc(0))).subarray(from).toString('utf8');
  const count = (pattern: RegExp) => text.match(pattern)?.length ?? 0;
  return { slow: count(/TMPRL1104/g), lost: count(/Workflow task not found/g) };
}

async function upstreamCounts(upstream: Upstream): Promise<{ total: number; answered: number }> {
  const response = await fetch(`${upstream.url}/_simulator/requests`);
  return (await response.json()) as { total: number; answered: number };
}

/** The output file read back: every custom_id once, each a 200 with a completion; an error file is a failure. */
async function checkOutput(
  platform: Platform,
  key: string,
  batch: BatchView,
  prefix: string,
  count: number,
): Promise<string | undefined> {
  let failure: string | undefined;
  if (batch.status !== 'completed') failure = `the batch ended ${batch.status}: ${JSON.stringify(batch.errors)}`;
  if (batch.error_file_id) {
    const errors = await call<string>(platform, key, `/v1/files/${batch.error_file_id}/content`);
    const lines = errors.trim().split('\n');
    failure ??= `an error file of ${lines.length} line(s), the first: ${lines[0]?.slice(0, 300)}`;
  }
  if (!batch.output_file_id) return failure ?? 'no output file';
  const output = await call<string>(platform, key, `/v1/files/${batch.output_file_id}/content`);
  const seen = new Set<string>();
  for (const text of output.trim().split('\n')) {
    const line = JSON.parse(text) as {
      custom_id: string;
      response: { status_code: number; body: { choices?: Array<{ message?: { content?: string } }> } } | null;
      error: unknown;
    };
    if (seen.has(line.custom_id)) failure ??= `${line.custom_id} twice in the output`;
    seen.add(line.custom_id);
    if (
      line.response?.status_code !== 200 ||
      line.error !== null ||
      !line.response.body.choices?.[0]?.message?.content
    ) {
      failure ??= `not a completion: ${text.slice(0, 300)}`;
    }
  }
  const missing = Array.from({ length: count }, (_, index) => `${prefix}-${index + 1}`).filter((id) => !seen.has(id));
  if (missing.length > 0) failure ??= `${missing.length} line(s) missing from the output, e.g. ${missing[0]}`;
  if (seen.size !== count) failure ??= `${seen.size} lines in the output, not ${count}`;
  return failure;
}

/** A value of a history as JSON prints it: 64-bit integers as decimal strings, bytes in base64. */
function historyJson(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value && typeof value === 'object' && 'low' in value && 'high' in value && 'unsigned' in value) {
    return String(value);
  }
  return value;
}

/**
 * Every run of the batch's workflow, from the last back through each run's `continuedExecutionRunId`: its events,
 * Temporal's history size, the JSON of its history, and the concurrency in its input.
 */
async function batchHistory(batchId: string): Promise<HistoryFigures> {
  const workflowId = `batch-${batchId}`;
  const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
  try {
    const client = new Client({ connection });
    const runs: HistoryRun[] = [];
    let runId: string | undefined;
    for (;;) {
      const handle = client.workflow.getHandle(workflowId, runId);
      const description = await handle.describe();
      const history = await handle.fetchHistory();
      const events = history.events ?? [];
      const started = events[0]?.workflowExecutionStartedEventAttributes;
      const data = started?.input?.payloads?.[0]?.data;
      const input = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { concurrency?: number }) : {};
      runs.unshift({
        runId: description.runId,
        status: description.status.name,
        events: events.length,
        bytes: description.historySize ?? Number.NaN,
        jsonBytes: Buffer.byteLength(JSON.stringify(history, historyJson)),
        concurrency: input.concurrency,
      });
      runId = started?.continuedExecutionRunId ?? undefined;
      if (!runId) break;
    }
    // Visibility trails the runs a little: read until it lists them all, at most 10 s.
    let listed = 0;
    for (let attempt = 0; attempt < 20; attempt++) {
      listed = 0;
      for await (const _run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) listed += 1;
      if (listed >= runs.length) break;
      await sleep(500);
    }
    return { runs, listed };
  } finally {
    await connection.close();
  }
}

/**
 * One batch: the file uploaded, the batch created and read every 250 ms (with the upstream's requests in flight)
 * until it ends, the platform's CPU over that, its output checked. Answers the batch's figures, or throws.
 */
async function runBatch(
  platform: Platform,
  upstream: Upstream,
  key: string,
  prefix: string,
  count: number,
  round: number,
): Promise<BatchResult> {
  const file = inputFile(prefix, count);
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([file], { type: 'application/jsonl' }), `${prefix}.jsonl`);
  const uploadStarted = performance.now();
  const uploaded = await call<{ id: string }>(platform, key, '/v1/files', { method: 'POST', body: form });
  const uploadSeconds = (performance.now() - uploadStarted) / 1000;
  await waitForIdlePlatform(platform, log);

  const upstreamBefore = await upstreamCounts(upstream);
  // Requests the simulator received and never finished answering (their caller gave up on them), before the batch.
  const abandoned = upstreamBefore.total - upstreamBefore.answered;
  const logBefore = await logSize();
  const before = await snapshot(await shippedProcesses(platform));
  const startedAt = performance.now();
  const created = await call<BatchView>(platform, key, '/v1/batches', {
    method: 'POST',
    body: JSON.stringify({ input_file_id: uploaded.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
  });
  const read: Target = { url: `${platform.url}/v1/batches/${created.id}`, headers: { authorization: `Bearer ${key}` } };
  const seconds = () => (performance.now() - startedAt) / 1000;
  let batch = created;
  let inProgressAt = Number.NaN;
  let linesDoneAt = Number.NaN;
  const inFlight: number[] = [];
  const deadline = startedAt + 120_000 + count * 100;
  for (;;) {
    const sample = await exchange('GET', read, {
      expect: jsonAnswer<BatchView>((body) => {
        batch = body;
        return true;
      }),
    });
    if (!sample.ok) throw new Error(`GET /v1/batches/${created.id}: ${sample.failure}`);
    const { total: all, completed, failed } = batch.request_counts;
    if (batch.status !== 'validating' && Number.isNaN(inProgressAt)) inProgressAt = seconds();
    if (all > 0 && completed + failed >= all && Number.isNaN(linesDoneAt)) linesDoneAt = seconds();
    if (['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) break;
    if (batch.status === 'in_progress' && Number.isNaN(linesDoneAt)) {
      const counts = await upstreamCounts(upstream);
      inFlight.push(counts.total - counts.answered - abandoned);
    }
    if (performance.now() > deadline) throw new Error(`batch ${created.id} still ${batch.status} after ${seconds()} s`);
    await sleep(pollMs);
  }
  const completedAt = seconds();
  const usage = usageBetween(before, await snapshot(await shippedProcesses(platform)));
  const upstreamAfter = await upstreamCounts(upstream);
  const workflowTasks = await workflowTaskWarnings(logBefore);
  const outputFailure = await checkOutput(platform, key, batch, prefix, count);
  const history = await batchHistory(created.id);
  return {
    round,
    batchId: created.id,
    lines: batch.request_counts.total,
    completed: batch.request_counts.completed,
    failed: batch.request_counts.failed,
    ...(outputFailure ? { outputFailure } : {}),
    uploadSeconds,
    fileBytes: Buffer.byteLength(file),
    inProgressAt,
    linesDoneAt,
    completedAt,
    perSecond: batch.request_counts.completed / completedAt,
    usage,
    upstreamInFlight: {
      max: Math.max(0, ...inFlight),
      mean: inFlight.reduce((sum, value) => sum + value, 0) / Math.max(1, inFlight.length),
    },
    upstreamCalls: upstreamAfter.total - upstreamBefore.total,
    workflowTasks,
    history,
  };
}

/** The lines' requests, one after another (line 1 … `lineCount`, again from 1 once past it). */
function lineCursor(): () => number {
  let next = 0;
  return () => (next++ % lineCount) + 1;
}

function buildArms(upstream: Upstream, platform: Platform, key: string) {
  const direct: Target = { url: `${upstream.url}/v1/chat/completions`, headers: { authorization: 'Bearer bench' } };
  const completions: Target = {
    url: `${platform.url}/v1/chat/completions`,
    headers: { authorization: `Bearer ${key}` },
  };
  const directLine = lineCursor();
  const syncLine = lineCursor();
  /** The first failed call of each arm since its entry was cleared. */
  const failures: { direct?: string; sync?: string } = {};
  const kept = (arm: keyof typeof failures) => (sample: Sample) => {
    if (!sample.ok) failures[arm] ??= sample.failure ?? `HTTP ${sample.status}`;
    return sample;
  };
  return {
    failures,
    direct: {
      name: 'direct',
      call: () =>
        post(direct, JSON.stringify(requestBody(directLine(), upstreamModel)), false, isCompletion).then(
          kept('direct'),
        ),
    } satisfies MeasuredArm,
    sync: {
      name: 'tessera /v1/chat/completions',
      call: () =>
        post(completions, JSON.stringify(requestBody(syncLine(), model)), false, isCompletion).then(kept('sync')),
      processes: () => shippedProcesses(platform),
    } satisfies MeasuredArm,
  };
}

/** PostgreSQL's memory at each row of memoryRows: PSS (its shared buffers counted once over its backends), MiB. */
const postgresPss: number[] = [];

const memoryNow = async (platform: Platform, label: string) => {
  const processes = await shippedProcesses(platform);
  const pss = await memoryByRole(processes, true);
  memoryRows.push({ label, rss: await memoryByRole(processes), pss });
  postgresPss.push(pss.get('PostgreSQL') ?? Number.NaN);
};

const startedAt = Date.now();

async function runArms({ upstream, platform }: ShippedRun): Promise<void> {
  const key = await createBenchKey(platform);
  const arms = buildArms(upstream, platform, key);
  await upstream.setLatency(upstreamMs);
  await waitForIdlePlatform(platform, log);
  await memoryNow(platform, 'idle, before the arms');
  const load = { concurrency: clients, requests: lineCount, maxMs: 900_000 };

  loads.note('direct');
  log(`direct × ${clients}: ${lineCount} requests`);
  const { serverTimings: _direct, ...direct } = await measureArm(arms.direct, { load, log });
  directResults.push(direct);

  log(`warm-up batch of ${warmUpLines} lines`);
  const warmUp = await runBatch(platform, upstream, key, 'warm-up', warmUpLines, 0);
  if (warmUp.outputFailure) throw new Error(`the warm-up batch: ${warmUp.outputFailure}`);
  log(`  warm-up batch: ${warmUpLines} lines in ${warmUp.completedAt.toFixed(1)} s`);

  for (const [index, order] of rounds.entries()) {
    const round = index + 1;
    for (const arm of order) {
      await waitForIdlePlatform(platform, log);
      loads.note(`round ${round}: ${arm}`);
      if (arm === 'sync') {
        log(`round ${round}: sync × ${clients}, ${lineCount} completions`);
        let upstreamBefore = 0;
        let upstreamCalls = 0;
        let logBefore = 0;
        let workflowTasks: WorkflowTaskWarnings = { slow: 0, lost: 0 };
        const { serverTimings: _timings, ...result } = await measureArm(arms.sync, {
          load,
          log,
          beforeLoad: async () => {
            arms.failures.sync = undefined;
            upstreamBefore = (await upstreamCounts(upstream)).total;
            logBefore = await logSize();
          },
          afterLoad: async () => {
            upstreamCalls = (await upstreamCounts(upstream)).total - upstreamBefore;
            workflowTasks = await workflowTaskWarnings(logBefore);
          },
        });
        const firstFailure = arms.failures.sync;
        if (firstFailure) log(`  first failure: ${firstFailure}`);
        log(
          `  upstream calls ${upstreamCalls}; workflow tasks over 5 s ${workflowTasks.slow}, lost ${workflowTasks.lost}`,
        );
        syncResults.push({ round, result, upstreamCalls, workflowTasks, ...(firstFailure ? { firstFailure } : {}) });
        await memoryNow(platform, `end of round ${round}, sync`);
      } else {
        log(`round ${round}: a batch of ${lineCount} lines at ${clients} in flight`);
        const batch = await runBatch(platform, upstream, key, `round${round}`, lineCount, round);
        batchResults.push(batch);
        await memoryNow(platform, `end of round ${round}, batch`);
        const runs = batch.history.runs;
        log(
          `  batch ${batch.batchId}: ${batch.completed} completed, ${batch.failed} failed, ` +
            `${batch.completedAt.toFixed(1)} s, ${batch.perSecond.toFixed(1)} lines/s, ` +
            `CPU ${((total(batch.usage.cpu) * 1000) / Math.max(1, batch.completed)).toFixed(1)} ms/line, ` +
            `${runs.length} run(s), max ${Math.max(...runs.map((run) => run.events))} events ` +
            `${Math.max(...runs.map((run) => run.bytes))} bytes` +
            `${batch.outputFailure ? ` (output: ${batch.outputFailure})` : ''}`,
        );
      }
    }
  }
}

await writePlans();
const failure = await withShippedRun(
  { name: 'bench-batches', ports, log, environment: { PLANS_PATH: plansPath } },
  runArms,
);

const percent = (value: number) => (Number.isFinite(value) ? `${(value * 100).toFixed(1)} %` : 'n/a');
const check = (ok: boolean) => (ok ? '✅' : '❌');
const cpuPerLine = (usage: Usage | undefined, lines: number) =>
  usage ? (total(usage.cpu) * 1000) / Math.max(1, lines) : Number.NaN;
const sumOf = (values: number[]) => values.reduce((sum, value) => sum + value, 0);

const sections: string[] = [];
const directRate = directResults[0]?.summary.perSecond;
if (syncResults.length || batchResults.length) {
  // The rates over both rounds together: lines answered over the seconds they took.
  const syncLines = sumOf(syncResults.map(({ result }) => result.summary.n));
  const syncSeconds = sumOf(syncResults.map(({ result }) => result.summary.n / result.summary.perSecond));
  const batchLines = sumOf(batchResults.map((batch) => batch.completed));
  const batchSeconds = sumOf(batchResults.map((batch) => batch.completedAt));
  const syncRate = syncLines / syncSeconds;
  const batchRate = batchLines / batchSeconds;
  const syncCpu = sumOf(syncResults.map(({ result }) => total(result.usage!.cpu) * 1000)) / Math.max(1, syncLines);
  const batchCpu = sumOf(batchResults.map((batch) => total(batch.usage.cpu) * 1000)) / Math.max(1, batchLines);
  const lastMemory = memoryRows.at(-1)?.rss;

  const rows = [
    '| arm | round | lines answered | errors | seconds | **lines/s** | % of sync (same round) | % of direct | CPU ms per line | latency p50 / p99 (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const result of directResults) {
    rows.push(
      `| direct | — | ${result.summary.n} | ${result.summary.errors} | ` +
        `${rateCell(result.summary.n / result.summary.perSecond)} | **${rateCell(result.summary.perSecond)}** | — | ` +
        `100 % | — | ${ms(result.summary.p50)} / ${ms(result.summary.p99)} |`,
    );
  }
  for (const [index] of rounds.entries()) {
    const round = index + 1;
    const sync = syncResults.find((entry) => entry.round === round)?.result;
    const batch = batchResults.find((entry) => entry.round === round);
    if (sync) {
      rows.push(
        `| sync: ${sync.arm} | ${round} | ${sync.summary.n} | ${sync.summary.errors} | ` +
          `${rateCell(sync.summary.n / sync.summary.perSecond)} | **${rateCell(sync.summary.perSecond)}** | 100 % | ` +
          `${directRate ? percent(sync.summary.perSecond / directRate) : 'n/a'} | ` +
          `${ms(cpuPerLine(sync.usage, sync.summary.n))} | ${ms(sync.summary.p50)} / ${ms(sync.summary.p99)} |`,
      );
    }
    if (batch) {
      rows.push(
        `| batch: /v1/batches, created → completed | ${round} | ${batch.completed} | ${batch.failed} | ` +
          `${rateCell(batch.completedAt)} | **${rateCell(batch.perSecond)}** | ` +
          `${sync ? percent(batch.perSecond / sync.summary.perSecond) : 'n/a'} | ` +
          `${directRate ? percent(batch.perSecond / directRate) : 'n/a'} | ` +
          `${ms(cpuPerLine(batch.usage, batch.completed))} | — |`,
      );
    }
  }
  sections.push(
    '## Lines per second',
    '',
    `${lineCount.toLocaleString('en')} requests (a chat completion of \`${model}\`, max_tokens 50, each line its own ` +
      `message), the upstream answering after ${upstreamMs} ms; ${clients} closed-loop clients for direct and sync, ` +
      `${clients} lines in flight for the batch (the bench's plans file). The batch's seconds run from its POST to ` +
      `the first read that saw it \`completed\` (output file written), so its validation (the lines taken from the ` +
      'file) and finalizing are in them; the upload is not (below). CPU: every platform process, for the batch from its ' +
      'POST to `completed` seen, its reads every 250 ms included.',
    '',
    rows.join('\n'),
    '',
    `Over ${syncResults.length > 1 ? 'both rounds' : 'the run'}: **batch ${rateCell(batchRate)} lines/s against ` +
      `sync ${rateCell(syncRate)}: ${percent(batchRate / syncRate)}** (goal ≥ ${goal * 100} % ` +
      `${check(batchRate / syncRate >= goal)}); direct ${directRate ? rateCell(directRate) : 'n/a'}/s. ` +
      `**CPU per line: batch ${ms(batchCpu)} ms, sync ${ms(syncCpu)} ms per completion.**`,
    '',
  );

  const strain = [
    '| round | arm | upstream calls per line answered | workflow tasks over 5 s (TMPRL1104) | workflow tasks timed out before their completion ("Task not found") | first failure |',
    '|---:|---|---:|---:|---:|---|',
  ];
  for (const sync of syncResults) {
    strain.push(
      `| ${sync.round} | sync | ${(sync.upstreamCalls / Math.max(1, sync.result.summary.n)).toFixed(3)} | ` +
        `${sync.workflowTasks.slow} | ${sync.workflowTasks.lost} | ${sync.firstFailure ? `\`${sync.firstFailure}\`` : '—'} |`,
    );
  }
  for (const batch of batchResults) {
    strain.push(
      `| ${batch.round} | batch | ${(batch.upstreamCalls / Math.max(1, batch.completed)).toFixed(3)} | ` +
        `${batch.workflowTasks.slow} | ${batch.workflowTasks.lost} | ${batch.outputFailure ?? '—'} |`,
    );
  }
  sections.push(
    "How the platform bore each arm: the simulator's requests per line answered (1 when no call was made twice), and " +
      "the workflow-task warnings of the platform's log while the arm ran (the SDK's TMPRL1104, a task that ran over " +
      '5 s; and a completion the server refused because the task had timed out meanwhile, so it ran again):',
    '',
    strain.join('\n'),
    '',
  );

  const phases = [
    '| round | upload (file, KB) | POST → `in_progress` seen (s) | → every line counted (s) | → `completed` seen (s) | lines/s while running | upstream in flight max / mean | upstream calls | output checked |',
    '|---:|---|---:|---:|---:|---:|---|---:|---|',
  ];
  for (const batch of batchResults) {
    const running = batch.completed / (batch.linesDoneAt - batch.inProgressAt);
    phases.push(
      `| ${batch.round} | ${ms(batch.uploadSeconds * 1000)} ms (${(batch.fileBytes / 1024).toFixed(0)}) | ` +
        `${ms(batch.inProgressAt)} | ${ms(batch.linesDoneAt)} | ${ms(batch.completedAt)} | ${rateCell(running)} | ` +
        `${batch.upstreamInFlight.max} / ${batch.upstreamInFlight.mean.toFixed(1)} | ${batch.upstreamCalls} | ` +
        `${batch.outputFailure ? `❌ ${batch.outputFailure}` : `✅ ${batch.completed} lines, each custom_id once, all 200`} |`,
    );
  }
  sections.push(
    '## The batch, phase by phase',
    '',
    `As the reads (every ${pollMs} ms) saw it, from the POST of the batch. "Lines/s while running" is the lines over ` +
      'the time from `in_progress` seen to every line counted; "upstream in flight" is the simulator\'s requests ' +
      'received and not yet answered, read with each read of the batch while it ran.',
    '',
    phases.join('\n'),
    '',
  );

  const historyRows = [
    "| round | batch | runs (visibility lists) | events per run: max / all runs | **history bytes per run: max** / all runs | JSON of a run's history, max (bytes) | concurrency in the runs' input |",
    '|---:|---|---:|---|---|---:|---|',
  ];
  for (const batch of batchResults) {
    const runs = batch.history.runs;
    historyRows.push(
      `| ${batch.round} | \`${batch.batchId}\` | ${runs.length} (${batch.history.listed}) | ` +
        `${Math.max(...runs.map((run) => run.events))} / ${sumOf(runs.map((run) => run.events))} | ` +
        `**${Math.max(...runs.map((run) => run.bytes)).toLocaleString('en')}** / ` +
        `${sumOf(runs.map((run) => run.bytes)).toLocaleString('en')} | ` +
        `${Math.max(...runs.map((run) => run.jsonBytes)).toLocaleString('en')} | ` +
        `${[...new Set(runs.map((run) => run.concurrency ?? '?'))].join(', ')} |`,
    );
  }
  const last = batchResults.at(-1);
  const runRows = ['| run | status | events | history bytes | JSON bytes |', '|---:|---|---:|---:|---:|'];
  for (const [index, run] of (last?.history.runs ?? []).entries()) {
    runRows.push(
      `| ${index + 1} | ${run.status} | ${run.events} | ${run.bytes.toLocaleString('en')} | ` +
        `${run.jsonBytes.toLocaleString('en')} |`,
    );
  }
  sections.push(
    "## The batch workflow's history",
    '',
    'Every run of `batch-<id>` (the workflow continues as new every 2,000 lines), walked back from the last through ' +
      "each run's `continuedExecutionRunId`: its events, Temporal's history size (`historySizeBytes`, what the " +
      'server stores and limits), and its history as JSON with payloads in base64 (as `temporal workflow show -o json` ' +
      'prints it).',
    '',
    historyRows.join('\n'),
    '',
    ...(last ? [`Each run of the last batch:`, '', runRows.join('\n'), ''] : []),
  );

  const costs = [
    ...syncResults.map(({ round, result }) => ({
      cell: { title: `round ${round}` },
      arms: [{ arm: 'sync /v1/chat/completions', summary: result.summary, usage: result.usage }],
    })),
    ...batchResults.map((batch) => ({
      cell: { title: `round ${batch.round}` },
      arms: [{ arm: 'batch', summary: { n: batch.completed, perSecond: batch.perSecond }, usage: batch.usage }],
    })),
  ].sort((a, b) => a.cell.title.localeCompare(b.cell.title));
  const machineRows = [
    '| round | arm | seconds | platform busy (of 2 cores) | whole machine busy (of 2 cores) | the bench process (of 2 cores) |',
    '|---:|---|---:|---:|---:|---:|',
  ];
  const busy = (usage: Usage, seconds: number) => percent(total(usage.cpu) / seconds / 2);
  for (const { round, result } of syncResults) {
    const usage = result.usage!;
    machineRows.push(
      `| ${round} | sync | ${rateCell(usage.seconds)} | ${busy(usage, usage.seconds)} | ` +
        `${percent(usage.machineCpu / usage.seconds / 2)} | ${percent(usage.benchCpu / usage.seconds / 2)} |`,
    );
  }
  for (const batch of batchResults) {
    const usage = batch.usage;
    machineRows.push(
      `| ${batch.round} | batch | ${rateCell(usage.seconds)} | ${busy(usage, usage.seconds)} | ` +
        `${percent(usage.machineCpu / usage.seconds / 2)} | ${percent(usage.benchCpu / usage.seconds / 2)} |`,
    );
  }
  sections.push(
    '## What the platform spends per line',
    '',
    'A line is one request: a synchronous completion, or a batch line. All platform processes of `npm start`, by role.',
    '',
    costTable(costs, 'line'),
    '',
    'The cores while each arm ran (the machine includes the simulator, the bench and any other work on it):',
    '',
    machineRows.join('\n'),
    '',
  );
  const lastSync = syncResults.at(-1)?.result;
  if (lastSync && last) {
    sections.push(
      `By thread of the API and worker processes, round ${syncResults.at(-1)!.round}, sync:`,
      '',
      threadTable(lastSync, 'line'),
      '',
      `Round ${last.round}, batch:`,
      '',
      threadTable({ arm: 'batch', summary: { ...lastSync.summary, n: last.completed }, usage: last.usage }, 'line'),
      '',
    );
  }
  sections.push(
    '## Memory',
    '',
    "RSS of the platform's processes when each arm ended (the batch workflow and its lines run in whichever of the API " +
      'and worker processes polls its task first; both poll the same queue).',
    '',
    memoryTable(memoryRows),
    '',
    ...(lastMemory
      ? [
          `At the end: API ${lastMemory.get('API')?.toFixed(0)} MiB, worker ${lastMemory.get('worker')?.toFixed(0)} MiB, ` +
            `Temporal ${lastMemory.get('Temporal')?.toFixed(0)} MiB; PostgreSQL ` +
            `${postgresPss.at(-1)?.toFixed(0)} MiB PSS (its backends together, shared buffers counted once; ` +
            `${postgresPss.map((value) => value.toFixed(0)).join(', ')} MiB at the rows above).`,
          '',
        ]
      : []),
  );
}

await writeResults(
  'batches-results.md',
  'Tessera batches benchmark',
  [
    reportLead() +
      '`npm run bench:batches`. `npm start` as shipped in its own processes, data directory and ports, with a metered ' +
      `business key, and one setting of the bench's own: PLANS_PATH, a copy of config/plans.yaml whose business plan ` +
      `runs ${clients} lines of a batch at once (128 shipped), as many as the synchronous arm's clients. Upstream: the ` +
      `provider simulator in its own process, answering after ${upstreamMs} ms; load: closed loop from the bench ` +
      'process over node:http keep-alive, everything on the same cores. ' +
      (rounds.length > 1
        ? 'The two Tessera arms ran twice, in turns (sync then batch, then batch then sync). '
        : 'One round: sync, then batch. ') +
      `Before them: the direct arm, and a warm-up batch of ${warmUpLines} lines.`,
    '',
    ...failureLines(failure),
    ...sections,
    ...loads.lines(),
  ],
  { startedAt, log },
);
endBench(failure ? 1 : 0);
