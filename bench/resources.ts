/**
 * Where the CPU goes during a phase (this process, the Temporal dev server, the PostgreSQL backends of the
 * bench's database) and how much memory this process holds. Linux /proc only; elsewhere the extras read 0.
 */
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';

const clockTicksPerSecond = 100;

async function readProc(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds of one process, or undefined when it is gone or unreadable. */
async function cpuSecondsOf(pid: number | string): Promise<number | undefined> {
  const stat = await readProc(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
}

/** Resident set size of one process in MiB. */
export async function rssMiBOf(pid: number): Promise<number | undefined> {
  const status = await readProc(`/proc/${pid}/status`);
  const match = status && /^VmRSS:\s+(\d+) kB/m.exec(status);
  return match ? Number(match[1]) / 1024 : undefined;
}

/** Pids of `temporal server start-dev` processes on this machine. */
export async function temporalServerPids(): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readProc(`/proc/${entry}/cmdline`);
    if (cmdline?.includes('start-dev') && cmdline.includes('server')) pids.push(Number(entry));
  }
  return pids;
}

async function postgresBackendPids(adminUrl: string, database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const result = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [
      database,
    ]);
    return result.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** CPU seconds of this process's threads, summed by thread name (main JS thread, workflow thread, Rust core…). */
async function threadCpu(): Promise<Map<string, number>> {
  const byThread = new Map<string, number>();
  let tids: string[];
  try {
    tids = await readdir('/proc/self/task');
  } catch {
    return byThread;
  }
  for (const tid of tids) {
    const [comm, seconds] = await Promise.all([
      readProc(`/proc/self/task/${tid}/comm`),
      cpuSecondsOf(`self/task/${tid}`),
    ]);
    if (comm === undefined || seconds === undefined) continue;
    byThread.set(`${tid}:${comm.trim()}`, seconds);
  }
  return byThread;
}

/** Busy CPU seconds of the whole machine so far (all cores, everything but idle and iowait). */
async function machineBusySeconds(): Promise<number> {
  const stat = await readProc('/proc/stat');
  const fields = stat?.split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number);
  if (!fields || fields.length < 5) return 0;
  const total = fields.reduce((sum, value) => sum + value, 0);
  return (total - fields[3]! - fields[4]!) / clockTicksPerSecond;
}

export interface CpuBreakdown {
  /** Seconds of CPU: this process (gateway, worker, simulator and the load clients). */
  bench: number;
  /** The bench process's CPU seconds by thread name. */
  threads: Map<string, number>;
  temporal: number;
  postgres: number;
  /** Everything else busy on the machine meanwhile (other processes: noise). */
  other: number;
  wallSeconds: number;
}

export interface CpuMeter {
  stop(): Promise<CpuBreakdown>;
}

/** Starts measuring CPU over a phase. `databaseUrl` is the bench's own database (its backends are counted). */
export async function startCpuMeter(databaseUrl: string, adminUrl: string): Promise<CpuMeter> {
  const database = new URL(databaseUrl).pathname.slice(1);
  const snapshot = async () => {
    const pids: Array<readonly ['temporal' | 'postgres', number]> = (await temporalServerPids()).map(
      (pid) => ['temporal', pid] as const,
    );
    for (const pid of await postgresBackendPids(adminUrl, database).catch(() => [])) pids.push(['postgres', pid]);
    const cpu = new Map<number, { kind: 'temporal' | 'postgres'; seconds: number }>();
    for (const [kind, pid] of pids) {
      const seconds = await cpuSecondsOf(pid);
      if (seconds !== undefined) cpu.set(pid, { kind, seconds });
    }
    return cpu;
  };
  const before = await snapshot();
  const threadsBefore = await threadCpu();
  const machineBefore = await machineBusySeconds();
  const processBefore = process.cpuUsage();
  const startedAt = performance.now();
  return {
    async stop() {
      const wallSeconds = (performance.now() - startedAt) / 1000;
      const own = process.cpuUsage(processBefore);
      const after = await snapshot();
      const totals = { temporal: 0, postgres: 0 };
      for (const [pid, { kind, seconds }] of after) totals[kind] += seconds - (before.get(pid)?.seconds ?? 0);
      const threads = new Map<string, number>();
      for (const [key, seconds] of await threadCpu()) {
        const name = key.slice(key.indexOf(':') + 1);
        threads.set(name, (threads.get(name) ?? 0) + seconds - (threadsBefore.get(key) ?? 0));
      }
      const bench = (own.user + own.system) / 1e6;
      const machine = (await machineBusySeconds()) - machineBefore;
      const other = Math.max(0, machine - bench - totals.temporal - totals.postgres);
      return { bench, threads, ...totals, other, wallSeconds };
    },
  };
}

export interface MemoryPoint {
  rssMiB: number;
  heapUsedMiB: number;
}

export function memoryNow(): MemoryPoint {
  const usage = process.memoryUsage();
  return { rssMiB: usage.rss / 2 ** 20, heapUsedMiB: usage.heapUsed / 2 ** 20 };
}

/** Samples this process's memory every 200 ms and keeps the peak. */
export function startMemoryPeak(): { stop(): MemoryPoint } {
  const peak = memoryNow();
  const timer = setInterval(() => {
    const now = memoryNow();
    peak.rssMiB = Math.max(peak.rssMiB, now.rssMiB);
    peak.heapUsedMiB = Math.max(peak.heapUsedMiB, now.heapUsedMiB);
  }, 200);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}
