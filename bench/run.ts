/**
 * `npm run bench`: Tessera as users run it, against a direct call and against Portkey's gateway, on one upstream.
 *
 * Every arm is its own process tree on loopback, and the load comes from this process:
 * - upstream: the provider simulator (`scripts/simulator.ts`), an OpenAI-compatible server whose answer delay is
 *   set per cell (0 ms, or 300 ms before the answer / the first token);
 * - direct: the load calls the upstream itself (the base of every ratio);
 * - Portkey: `@portkey-ai/gateway` (pinned), forwarding to the upstream;
 * - tessera: `npm start` as shipped (persistent dev server, embedded PostgreSQL, API with its worker, background
 *   worker), with a metered, rate-limited business key;
 * - tessera-production: `npm run api` + `npm run worker` on the machine's PostgreSQL and a Temporal server that
 *   persists to PostgreSQL (built with `go install`; BENCH_PRODUCTION=0 skips it).
 * Within a cell the arms run one after the other, in rotating order, so drift hits each alike. For the Tessera arms
 * the CPU and bytes written of every platform process (API, worker, Temporal, PostgreSQL) are measured.
 *
 * Writes bench/results.md. BENCH_QUICK=1 runs a fraction of each cell (a smoke run, not figures). BENCH_CELLS=slow-64
 * (ids, comma-separated) runs only those cells, for trying a change, and writes bench/results-partial.md instead (not
 * kept in git), so the full report stays the one to compare with.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { agent, post, type Sample, type Target } from './http-client.ts';
import {
  type Upstream,
  createBenchKey,
  repositoryRoot,
  shippedProcesses,
  startPortkey,
  startProduction,
  startShipped,
  startUpstream,
  type Platform,
} from './arms.ts';
import { benchLog, endBench, quick, shrink } from './bench-process.ts';
import { measureArm } from './measure.ts';
import { listProcesses, processTree, type ProcessInfo } from '../scripts/lib/processes.ts';
import { memoryByRole, roleOf, waitUntilIdle, type Role } from './resources.ts';
import {
  cellTable,
  costTable,
  memoryTable,
  reportLead,
  stageTable,
  summarizeTimings,
  threadTable,
  writeResults,
  type ArmResult,
  type CellResult,
  type CellSpec,
  type StageTiming,
} from './report.ts';
import { startTemporalOnPostgres } from '../scripts/lib/temporal-postgres.ts';
import { createDatabase, dropDatabase } from '../db/databases.ts';

const withShipped = process.env.BENCH_SHIPPED !== '0';
const withProduction = process.env.BENCH_PRODUCTION !== '0';
const productionDatabase = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const benchDir = join(repositoryRoot, '.data', 'bench');
const logDir = join(benchDir, 'logs');
const ports = { upstream: 19010, portkey: 18787, shipped: 18080, production: 18081 };

const allCells: CellSpec[] = [
  {
    id: 'instant-1',
    title: '1 client, instant upstream',
    clients: 1,
    upstreamMs: 0,
    stream: false,
    requests: 500,
    targets: { addedP50Ms: 10, addedP99Ms: 30 },
  },
  {
    id: 'instant-16',
    title: '16 clients, instant upstream',
    clients: 16,
    upstreamMs: 0,
    stream: false,
    seconds: 15,
    targets: { minPerSecond: 150 },
  },
  { id: 'slow-1', title: '1 client, upstream 300 ms', clients: 1, upstreamMs: 300, stream: false, requests: 60 },
  {
    id: 'slow-64',
    title: '64 clients, upstream 300 ms',
    clients: 64,
    upstreamMs: 300,
    stream: false,
    seconds: 20,
    targets: { minPerSecond: 150, addedP50Ms: 20, addedP99Ms: 150 },
  },
  {
    id: 'stream-1',
    title: 'streaming, 1 client, first token at 300 ms',
    clients: 1,
    upstreamMs: 300,
    stream: true,
    requests: 60,
    targets: { addedP50Ms: 10 },
  },
  {
    id: 'stream-64',
    title: 'streaming, 64 clients, first token at 300 ms',
    clients: 64,
    upstreamMs: 300,
    stream: true,
    seconds: 20,
    targets: { addedP50Ms: 30 },
  },
];

const onlyCells = process.env.BENCH_CELLS?.split(',').map((id) => id.trim());
const unknownCells = onlyCells?.filter((id) => !allCells.some((cell) => cell.id === id)) ?? [];
if (unknownCells.length) {
  throw new Error(
    `BENCH_CELLS: no cell ${unknownCells.join(', ')} (cells: ${allCells.map((cell) => cell.id).join(', ')})`,
  );
}
const cells = onlyCells ? allCells.filter((cell) => onlyCells.includes(cell.id)) : allCells;

const model = 'gpt-4o-mini';
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'Say hello to the benchmark in one short sentence.';
const body = (modelId: string, stream: boolean) =>
  JSON.stringify({
    model: modelId,
    messages: [{ role: 'user', content: prompt }],
    ...(stream ? { stream: true } : {}),
  });

const log = benchLog('bench');

const costNotes =
  'At 3 completions/s (the 1-client, 300 ms cells) the figures are mostly what the platform spends anyway: idle ' +
  "polling, and the previous cell's deferred work (each workflow task's timeout timer fires 10 s later). The " +
  "processes' bytes are /proc's write_bytes: pages dirtied in the page cache, counted again each time a page is " +
  "rewritten in place (the dev server's write-ahead log after each checkpoint, PostgreSQL's WAL and data pages), and " +
  'on kernels that cache files in large folios (6.18 here) a whole folio each time, so a WAL commit of 8 KB can count ' +
  '200 KB or more: they say who writes, not how much. The machine column is what the block devices received (every ' +
  'process on the machine, bench logs included): that is the figure.';

interface Arm {
  name: string;
  target: Target;
  model: string;
  /** The processes to meter while this arm runs (Tessera only). */
  processes?: () => Promise<ProcessInfo[]>;
}

function call(arm: Arm, stream: boolean): () => Promise<Sample> {
  const payload = body(arm.model, stream);
  return () => post(arm.target, payload, stream);
}

/** BENCH_PERF=1: the Tessera arms of the 64-client, 300 ms cell recorded with perf (bench/measure.ts) into logs/. */
const perfCell = process.env.BENCH_PERF === '1' ? 'slow-64' : null;
/**
 * BENCH_PROFILE=API (or worker): a CPU profile of that process's main thread over the Tessera arms of the 64-client,
 * 300 ms cell, into logs/ (bench/profile.ts), summarized in the bench's log.
 */
const profiledRole = process.env.BENCH_PROFILE as Role | undefined;

async function runArm(arm: Arm, cell: CellSpec, collectTimings: string[] | null): Promise<ArmResult> {
  const { serverTimings, ...result } = await measureArm(
    { name: arm.name, call: call(arm, cell.stream), processes: arm.processes },
    {
      load: {
        concurrency: cell.clients,
        requests: cell.requests ? shrink(cell.requests) : Number.POSITIVE_INFINITY,
        maxMs: cell.seconds ? (quick ? 3_000 : cell.seconds * 1000) : 120_000,
      },
      pick: (sample) => (cell.stream ? sample.firstTokenMs : sample.totalMs),
      log,
      ...(cell.id === perfCell && arm.name.startsWith('tessera')
        ? { perfFile: join(logDir, `perf-${arm.name}-${cell.id}.data`) }
        : {}),
      ...(profiledRole && cell.id === 'slow-64' && arm.processes && arm.name.startsWith('tessera')
        ? {
            cpuProfile: {
              pid: async () => (await arm.processes!()).find((info) => roleOf(info) === profiledRole)?.pid,
              file: join(logDir, `${profiledRole}-${arm.name}-${cell.id}.cpuprofile`),
            },
          }
        : {}),
    },
  );
  collectTimings?.push(...serverTimings);
  return result;
}

async function runPhase(
  label: string,
  upstream: Awaited<ReturnType<typeof startUpstream>>,
  arms: Arm[],
): Promise<{ results: CellResult[]; timings: Map<string, StageTiming[]> }> {
  const results: CellResult[] = [];
  const timings = new Map<string, StageTiming[]>();
  for (const [index, cell] of cells.entries()) {
    log(`${label}: ${cell.title}`);
    await upstream.setLatency(cell.upstreamMs);
    // Rotate the order of arms from cell to cell; the direct call always runs first, as the cell's base.
    const others = arms.filter((arm) => arm.name !== 'direct');
    const rotated = [...others.slice(index % others.length), ...others.slice(0, index % others.length)];
    const ordered = [arms.find((arm) => arm.name === 'direct')!, ...rotated];
    const armResults: ArmResult[] = [];
    for (const arm of ordered) {
      const collected = arm.name.startsWith('tessera') ? ([] as string[]) : null;
      armResults.push(await runArm(arm, cell, collected));
      if (collected?.length) timings.set(cell.id, summarizeTimings(collected));
    }
    results.push({ cell, arms: arms.map((arm) => armResults.find((result) => result.arm === arm.name)!) });
  }
  return { results, timings };
}

function tesseraArm(name: string, platform: Platform, key: string, processes: () => Promise<ProcessInfo[]>): Arm {
  return {
    name,
    target: { url: `${platform.url}/v1/chat/completions`, headers: { authorization: `Bearer ${key}` } },
    model,
    processes,
  };
}

async function shippedPhase(upstream: Upstream, direct: Arm, portkeyArm: Arm, masterKey: string): Promise<void> {
  log('starting `npm start` (first run of its data directory: dev server store, embedded PostgreSQL, migrations)');
  const shipped = await startShipped({
    port: ports.shipped,
    temporalPort: 17233,
    postgresPort: 15432,
    dataDir: join(benchDir, 'npm-start-data'),
    upstreamUrl: upstream.url,
    masterKey,
    logDir,
  });
  let shippedResults: CellResult[];
  let shippedTimings: Map<string, StageTiming[]>;
  const shippedMemory: Array<{ label: string; rss: Map<Role, number>; pss: Map<Role, number> }> = [];
  const memoryNow = async (label: string) => {
    const processes = await shippedProcesses(shipped);
    shippedMemory.push({ label, rss: await memoryByRole(processes), pss: await memoryByRole(processes, true) });
  };
  try {
    const key = await createBenchKey(shipped);
    const arm = tesseraArm('tessera', shipped, key, () => shippedProcesses(shipped));
    await waitUntilIdle(() => shippedProcesses(shipped), { maxBusy: 0.1, timeoutMs: 60_000 });
    await memoryNow('idle after start-up');
    ({ results: shippedResults, timings: shippedTimings } = await runPhase('npm start', upstream, [
      direct,
      portkeyArm,
      arm,
    ]));
    await memoryNow('after the cells');
  } finally {
    log('stopping `npm start`');
    await shipped.stop();
  }

  sections.push(
    '## `npm start` as shipped',
    '',
    'Persistent Temporal dev server (SQLite file in WAL mode), embedded PostgreSQL, the API with its in-process ' +
      'worker and the background worker, each in its own process under `npm start`.',
    '',
  );
  for (const result of shippedResults) sections.push(`### ${result.cell.title}`, '', cellTable(result), '');
  sections.push(
    '### Cost per completion, all platform processes',
    '',
    costTable(shippedResults),
    '',
    costNotes,
    '',
    ...threadSection(shippedResults),
    '### Where a request spends its time in the API (Server-Timing, 1 client and 64 clients, upstream 300 ms)',
    '',
    stageTable(shippedTimings.get('slow-1') ?? []),
    '',
    stageTable(shippedTimings.get('slow-64') ?? []),
    '',
    '### Memory',
    '',
    memoryTable(shippedMemory),
    '',
  );
}

function threadSection(results: CellResult[]): string[] {
  const usage = results
    .find((result) => result.cell.id === 'slow-64')
    ?.arms.find((arm) => arm.usage && arm.arm.startsWith('tessera'));
  if (!usage) return [];
  return ['### Where the Node processes spend it (64 clients, upstream 300 ms)', '', threadTable(usage), ''];
}

async function productionPhase(upstream: Upstream, direct: Arm, portkeyArm: Arm, masterKey: string): Promise<void> {
  log('production shape: Temporal on PostgreSQL, npm run api + npm run worker');
  const names = {
    app: 'tessera_bench',
    persistence: 'tessera_bench_temporal',
    visibility: 'tessera_bench_visibility',
  };
  for (const name of Object.values(names)) await dropDatabase(productionDatabase, name);
  await createDatabase(productionDatabase, names.app);
  const temporal = await startTemporalOnPostgres({
    databaseUrl: productionDatabase,
    port: 17300,
    dataDir: join(benchDir, 'temporal-postgres'),
    databases: { persistence: names.persistence, visibility: names.visibility },
    log,
  });
  const appUrl = new URL(productionDatabase);
  appUrl.pathname = `/${names.app}`;
  let production: Platform | undefined;
  try {
    production = await startProduction({
      port: ports.production,
      temporalAddress: temporal.address,
      databaseUrl: appUrl.toString(),
      upstreamUrl: upstream.url,
      masterKey,
      logDir,
    });
    const platform = production;
    const processes = async () => {
      const all = await listProcesses();
      const trees = await Promise.all(platform.children.map((child) => processTree(child.process.pid!)));
      const postgres = all.filter((info) => info.comm === 'postgres');
      const server = all.filter((info) => info.pid === temporal.process.pid);
      return [...trees.flat(), ...postgres, ...server];
    };
    const key = await createBenchKey(production);
    const arm = tesseraArm('tessera-production', production, key, processes);
    const { results, timings } = await runPhase('production shape', upstream, [direct, portkeyArm, arm]);
    sections.push(
      '## Production shape: `npm run api` + `npm run worker`, Temporal on PostgreSQL',
      '',
      "The machine's PostgreSQL holds the app database and Temporal's two (default durability: a sync per " +
        'commit); the Temporal server (the same version the CLI embeds) is built with `go install`.',
      '',
    );
    for (const result of results) sections.push(`### ${result.cell.title}`, '', cellTable(result), '');
    sections.push(
      '### Cost per completion, all platform processes',
      '',
      costTable(results),
      '',
      costNotes,
      '',
      '### Where a request spends its time in the API (Server-Timing, 64 clients, upstream 300 ms)',
      '',
      stageTable(timings.get('slow-64') ?? []),
      '',
    );
  } finally {
    await production?.stop();
    await temporal.stop();
  }
}

/** Writes bench/results.md with the sections so far (after each phase, so a later failure keeps the earlier ones). */
async function writeReport(): Promise<void> {
  await writeResults(
    onlyCells ? 'results-partial.md' : 'results.md',
    'Tessera gateway benchmark',
    [
      reportLead() +
        `Model \`${model}\` (upstream \`${upstreamModel}\`); load: closed loop from the bench process over node:http ` +
        `keep-alive; the upstream, Portkey and each platform run in their own processes on the same cores. ` +
        '"Added" is the arm minus the direct call in the same cell. Latencies in ms.',
      '',
      'Portkey 1.15.2 answers every streamed request through its OpenAI provider with a 500 on Node (`TypeError: ' +
        "immutable` when it adds its headers to the upstream's response; Portkey-AI/gateway#1550): its streaming rows " +
        'are errors, not figures.',
      '',
      ...sections,
    ],
    { startedAt, log },
  );
}

const startedAt = Date.now();
const sections: string[] = [];
let upstream: Awaited<ReturnType<typeof startUpstream>> | undefined;
let portkey: Awaited<ReturnType<typeof startPortkey>> | undefined;
let exitCode = 0;
try {
  await rm(benchDir, { recursive: true, force: true });
  await mkdir(logDir, { recursive: true });
  log(`logs in ${logDir}`);
  upstream = await startUpstream(ports.upstream, logDir);
  portkey = await startPortkey(ports.portkey, logDir);
  const direct: Arm = {
    name: 'direct',
    target: { url: `${upstream.url}/v1/chat/completions`, headers: { authorization: 'Bearer bench' } },
    model: upstreamModel,
  };
  const portkeyArm: Arm = {
    name: 'portkey',
    target: {
      url: `http://127.0.0.1:${ports.portkey}/v1/chat/completions`,
      headers: {
        authorization: 'Bearer bench',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${upstream.url}/v1`,
      },
    },
    model: upstreamModel,
    // Metered like Tessera's arms: Portkey's CPU per request beside Tessera's, in the same run.
    processes: () => processTree(portkey!.process.pid!),
  };

  const masterKey = `te_bench_${randomBytes(16).toString('hex')}`;
  const phases: Array<[boolean, string, () => Promise<void>]> = [
    [withShipped, '`npm start` as shipped', () => shippedPhase(upstream!, direct, portkeyArm, masterKey)],
    [withProduction, 'Production shape', () => productionPhase(upstream!, direct, portkeyArm, masterKey)],
  ];
  for (const [enabled, title, phase] of phases) {
    if (!enabled) continue;
    try {
      await phase();
    } catch (error) {
      exitCode = 1;
      log(`${title} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      sections.push(`## ${title}`, '', `Failed: ${error instanceof Error ? error.message : String(error)}`, '');
    }
    await writeReport();
  }
} catch (error) {
  exitCode = 1;
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  agent.destroy();
  await portkey?.stop(5_000);
  await upstream?.child.stop(5_000);
}
endBench(exitCode);
