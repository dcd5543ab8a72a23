/**
 * What the benches on `npm start` as shipped (`bench:chat`, `bench:agents`, `bench:agents-durable`, `bench:media`)
 * share: the setup (the provider simulator in its own process, `npm start` in its own process tree, data directory
 * and ports, with the settings a bench changes, both stopped whatever happens), the wait for an idle platform, the
 * measured loop of one arm (a warm-up, then N calls from 1 or more clients, the first failure kept), and its row of
 * figures (p50 and p95) as the reports print and log it. (`npm run bench` runs its own arms: bench/run.ts.)
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { repositoryRoot, shippedProcesses, startShipped, startUpstream, type Platform, type Upstream } from './arms.ts';
import { agent, type Sample } from './http-client.ts';
import { quick } from './bench-process.ts';
import { percentile, runLoad } from './load.ts';
import { ms } from './report.ts';
import { waitUntilIdle } from './resources.ts';

export interface Figures {
  n: number;
  p50: number;
  p95: number;
}

export const figures = (values: Array<number | undefined>): Figures => {
  const present = values.filter((value): value is number => value !== undefined);
  return { n: present.length, p50: percentile(present, 50), p95: percentile(present, 95) };
};

export interface Measured<T extends Sample> {
  /** The calls that counted (`ok`). */
  samples: T[];
  errors: number;
  /** Why the first failed call of the measured run failed. */
  firstFailure?: string;
  perSecond: number;
}

/** A warm-up (connections, compiled code paths, pools), then `requests` measured calls from `clients` clients. */
export async function measureCalls<T extends Sample>(
  clients: number,
  requests: number,
  call: () => Promise<T>,
  /** Called right before and right after the measured calls (after the warm-up): e.g. to meter the processes. */
  hooks: { beforeLoad?: () => Promise<void>; afterLoad?: () => Promise<void> } = {},
): Promise<Measured<T>> {
  let firstFailure: string | undefined;
  const tracked = async () => {
    const sample = await call();
    if (!sample.ok) firstFailure ??= sample.failure ?? `HTTP ${sample.status}`;
    return sample;
  };
  await runLoad({ concurrency: clients, requests: Math.max(clients * 2, quick ? 2 : 20), maxMs: 30_000 }, tracked);
  firstFailure = undefined;
  await hooks.beforeLoad?.();
  const result = await runLoad({ concurrency: clients, requests, maxMs: 600_000 }, tracked);
  await hooks.afterLoad?.();
  return {
    samples: result.samples as T[],
    errors: result.errors,
    ...(firstFailure ? { firstFailure } : {}),
    perSecond: result.samples.length / (result.elapsedMs / 1000),
  };
}

/** One arm's measured calls at one concurrency, as a report row: the common columns of every bench's table. */
export interface MeasuredRow {
  arm: string;
  clients: number;
  /** The calls that counted. */
  n: number;
  errors: number;
  firstFailure?: string;
  perSecond: number;
}

export function measuredRow(arm: string, clients: number, measured: Measured<Sample>): MeasuredRow {
  return {
    arm,
    clients,
    n: measured.samples.length,
    errors: measured.errors,
    ...(measured.firstFailure ? { firstFailure: measured.firstFailure } : {}),
    perSecond: measured.perSecond,
  };
}

/** A row whose figures are the calls' whole times (the request to the end of the response). */
export interface LatencyRow extends MeasuredRow {
  latency: Figures;
}

/** Measures one arm at one concurrency (measureCalls) into a LatencyRow, and logs the row. */
export async function measureLatency(
  arm: string,
  clients: number,
  requests: number,
  call: () => Promise<Sample>,
  log: (line: string) => void,
): Promise<LatencyRow> {
  const measured = await measureCalls(clients, requests, call);
  const row = { ...measuredRow(arm, clients, measured), latency: figures(measured.samples.map((s) => s.totalMs)) };
  log(rowLogLine(row, p50p95(row.latency)));
  return row;
}

/** The log line of a row: `  <arm> × <clients>: n=… errors=…<figures> (first failure: …)`. */
export const rowLogLine = (row: MeasuredRow, figuresText: string): string =>
  `  ${row.arm} × ${row.clients}: n=${row.n} errors=${row.errors}${figuresText}` +
  `${row.firstFailure ? ` (first failure: ${row.firstFailure})` : ''}`;

/** A row's p50 and p95 for its log line. */
export const p50p95 = (figuresOf: Figures): string => ` p50=${ms(figuresOf.p50)} p95=${ms(figuresOf.p95)}`;

/** The lines under a table naming the first failure of each row that had one. */
export const firstFailureLines = (rows: MeasuredRow[]): string[] =>
  rows.flatMap((row) =>
    row.firstFailure ? ['', `First failure of ${row.arm} × ${row.clients}: \`${row.firstFailure}\``] : [],
  );

export interface ShippedRun {
  platform: Platform;
  upstream: Upstream;
  ports: { upstream: number; shipped: number; temporal: number; postgres: number };
  /** The embedded PostgreSQL's database (as scripts/lib/database.ts makes it for `npm start`). */
  databaseUrl: string;
}

/**
 * Starts the simulator and `npm start` (data and logs under `.data/<name>`), runs `body`, and stops both whatever
 * happens; returns why the run failed, if it did.
 */
export async function withShippedRun(
  options: {
    name: string;
    ports: ShippedRun['ports'];
    /** Settings that differ from `npm start`'s defaults (the bench's report says which and why). */
    environment?: Record<string, string>;
    log: (line: string) => void;
  },
  body: (run: ShippedRun) => Promise<void>,
): Promise<string | undefined> {
  const { ports, log } = options;
  const benchDir = join(repositoryRoot, '.data', options.name);
  const logDir = join(benchDir, 'logs');
  let upstream: Upstream | undefined;
  let platform: Platform | undefined;
  let failure: string | undefined;
  try {
    await rm(benchDir, { recursive: true, force: true });
    await mkdir(logDir, { recursive: true });
    log(`logs in ${logDir}`);
    upstream = await startUpstream(ports.upstream, logDir);
    log('starting `npm start` (first run of its data directory: dev server store, embedded PostgreSQL, migrations)');
    platform = await startShipped({
      port: ports.shipped,
      temporalPort: ports.temporal,
      postgresPort: ports.postgres,
      dataDir: join(benchDir, 'npm-start-data'),
      upstreamUrl: upstream.url,
      masterKey: `te_bench_${randomBytes(16).toString('hex')}`,
      logDir,
      ...(options.environment ? { environment: options.environment } : {}),
    });
    log(`gateway ${platform.url}, agent service ${platform.agentsUrl}`);
    await body({
      platform,
      upstream,
      ports,
      databaseUrl: `postgres://postgres:postgres@127.0.0.1:${ports.postgres}/tessera`,
    });
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    agent.destroy();
    if (platform) {
      log('stopping `npm start`');
      await platform.stop().catch(() => undefined);
    }
    await upstream?.child.stop(5_000);
  }
  return failure;
}

/** Waits until `npm start`'s processes are idle (start-up work, the previous phase) before measuring. */
export async function waitForIdlePlatform(platform: Platform, log: (line: string) => void): Promise<void> {
  const busy = await waitUntilIdle(() => shippedProcesses(platform), { maxBusy: 0.05, timeoutMs: 60_000 });
  log(`platform idle (${(busy * 100).toFixed(0)} % of a core)`);
}
