/**
 * What the platform's processes spend during a phase: CPU seconds (user + system) and bytes written to storage
 * (`/proc/<pid>/io` write_bytes), by role (API, worker, Temporal server, PostgreSQL), with the CPU of the Node
 * processes split by thread (main JavaScript thread, Node worker threads, Temporal's Rust core, GC). Linux /proc only.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { ProcessInfo } from '../scripts/lib/processes.ts';

const clockTicksPerSecond = 100;

export type Role = 'API' | 'worker' | 'Temporal' | 'PostgreSQL' | 'npm' | 'code runners' | 'Portkey' | 'other';
export const roles: Role[] = ['API', 'worker', 'Temporal', 'PostgreSQL', 'npm', 'code runners', 'Portkey', 'other'];

/** The role of a platform process, from its command line. */
export function roleOf(info: ProcessInfo): Role {
  const { comm, cmdline } = info;
  if (comm === 'postgres' || cmdline.includes('/postgres ') || cmdline.startsWith('postgres:')) return 'PostgreSQL';
  if (/\btemporal\b.*\bstart-dev\b/.test(cmdline) || /temporal-server|\/server --root/.test(cmdline)) {
    return 'Temporal';
  }
  // code_execute's runners (activities/tools/runner-pool.ts), children of the API process or the worker.
  if (cmdline.includes('code-runner.ts')) return 'code runners';
  if (cmdline.includes('@portkey-ai/gateway')) return 'Portkey';
  if (cmdline.includes('worker/main.ts')) return 'worker';
  if (cmdline.includes('api/server.ts')) return 'API';
  // `npm start`'s own process supervises the others (and plays the providers when no key is set): a launcher.
  if (comm === 'npm' || /\bnpm\b/.test(cmdline) || comm === 'sh' || cmdline.includes('scripts/start.ts')) return 'npm';
  return 'other';
}

async function readProc(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

export async function cpuSecondsOf(path: string): Promise<number | undefined> {
  const stat = await readProc(`${path}/stat`);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
}

async function writeBytesOf(pid: number): Promise<number> {
  const io = await readProc(`/proc/${pid}/io`);
  const match = io && /^write_bytes:\s+(\d+)/m.exec(io);
  return match ? Number(match[1]) : 0;
}

async function threadsOf(pid: number): Promise<Map<string, number>> {
  const threads = new Map<string, number>();
  const tids = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const tid of tids) {
    const [comm, seconds] = await Promise.all([
      readProc(`/proc/${pid}/task/${tid}/comm`),
      cpuSecondsOf(`/proc/${pid}/task/${tid}`),
    ]);
    if (comm === undefined || seconds === undefined) continue;
    const name = threadName(comm.trim());
    threads.set(name, (threads.get(name) ?? 0) + seconds);
  }
  return threads;
}

/** Thread names as they read in the report. */
function threadName(comm: string): string {
  if (comm === 'node' || comm === 'MainThread') return 'main JS thread';
  // The SDK's workflow thread when it has one (Tessera runs workflows on the main thread), the calculator's evaluator.
  if (comm === 'WorkerThread') return 'Node worker threads';
  if (comm.startsWith('tokio-runtime')) return 'Temporal core (Rust)';
  if (comm === 'V8Worker') return 'V8 GC and compiler';
  if (comm.startsWith('libuv-worker')) return 'libuv pool';
  return 'other threads';
}

interface ProcessSample {
  role: Role;
  cpu: number;
  written: number;
  threads: Map<string, number> | null;
}

export interface Snapshot {
  at: number;
  processes: Map<number, ProcessSample>;
  /** Sectors written by the machine's block devices (the whole machine, for a cross-check). */
  machineWritten: number;
  /** CPU seconds spent by the whole machine (every process) and by this (the bench's) process. */
  machineCpu: number;
  benchCpu: number;
}

/** Bytes written by the machine's disks so far (whole devices from /proc/diskstats, 512-byte sectors). */
async function machineWrittenBytes(): Promise<number> {
  const stats = await readProc('/proc/diskstats');
  let sectors = 0;
  for (const line of stats?.split('\n') ?? []) {
    const fields = line.trim().split(/\s+/);
    const name = fields[2] ?? '';
    // Whole disks only (vda, sda, nvme0n1), not partitions, loops or RAM disks.
    if (!/^(?:[shv]d[a-z]+|xvd[a-z]+|nvme\d+n\d+)$/.test(name)) continue;
    sectors += Number(fields[9] ?? 0);
  }
  return sectors * 512;
}

/** CPU seconds the machine has spent, all cores together (/proc/stat: user, nice, system, irq, softirq, steal). */
async function machineCpuSeconds(): Promise<number> {
  const stat = await readProc('/proc/stat');
  const fields = (stat?.split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / clockTicksPerSecond;
}

export async function snapshot(processes: ProcessInfo[]): Promise<Snapshot> {
  const samples = new Map<number, ProcessSample>();
  await Promise.all(
    processes.map(async (info) => {
      const role = roleOf(info);
      const cpu = await cpuSecondsOf(`/proc/${info.pid}`);
      if (cpu === undefined) return;
      const node = role === 'API' || role === 'worker';
      samples.set(info.pid, {
        role,
        cpu,
        written: await writeBytesOf(info.pid),
        threads: node ? await threadsOf(info.pid) : null,
      });
    }),
  );
  const own = process.cpuUsage();
  return {
    at: performance.now(),
    processes: samples,
    machineWritten: await machineWrittenBytes(),
    machineCpu: await machineCpuSeconds(),
    benchCpu: (own.user + own.system) / 1e6,
  };
}

export interface Usage {
  seconds: number;
  /** CPU seconds and bytes written by role. */
  cpu: Map<Role, number>;
  written: Map<Role, number>;
  /** CPU seconds of the Node processes (API and worker together) by thread. */
  threads: Map<string, number>;
  machineWritten: number;
  /** CPU seconds of the whole machine, and of the bench's own process. */
  machineCpu: number;
  benchCpu: number;
}

/** What the processes spent between two snapshots (a process that started in between counts from zero). */
export function usageBetween(before: Snapshot, after: Snapshot): Usage {
  const cpu = new Map<Role, number>();
  const written = new Map<Role, number>();
  const threads = new Map<string, number>();
  for (const [pid, sample] of after.processes) {
    const earlier = before.processes.get(pid);
    cpu.set(sample.role, (cpu.get(sample.role) ?? 0) + sample.cpu - (earlier?.cpu ?? 0));
    written.set(sample.role, (written.get(sample.role) ?? 0) + sample.written - (earlier?.written ?? 0));
    for (const [name, seconds] of sample.threads ?? []) {
      threads.set(name, (threads.get(name) ?? 0) + seconds - (earlier?.threads?.get(name) ?? 0));
    }
  }
  return {
    seconds: (after.at - before.at) / 1000,
    cpu,
    written,
    threads,
    machineWritten: after.machineWritten - before.machineWritten,
    machineCpu: after.machineCpu - before.machineCpu,
    benchCpu: after.benchCpu - before.benchCpu,
  };
}

/** Two phases' spending added up (an arm measured in several rounds). */
export function sumUsage(a: Usage, b: Usage): Usage {
  const add = <K>(x: Map<K, number>, y: Map<K, number>) => {
    const sum = new Map(x);
    for (const [key, value] of y) sum.set(key, (sum.get(key) ?? 0) + value);
    return sum;
  };
  return {
    seconds: a.seconds + b.seconds,
    cpu: add(a.cpu, b.cpu),
    written: add(a.written, b.written),
    threads: add(a.threads, b.threads),
    machineWritten: a.machineWritten + b.machineWritten,
    machineCpu: a.machineCpu + b.machineCpu,
    benchCpu: a.benchCpu + b.benchCpu,
  };
}

export function total(map: Map<Role, number>): number {
  let sum = 0;
  for (const value of map.values()) sum += value;
  return sum;
}

/**
 * Resident memory of processes by role, in MiB: RSS, or with `proportional` PSS (shared pages divided among the
 * processes that map them, so PostgreSQL's shared buffers count once over all its backends, not once per backend).
 */
export async function memoryByRole(processes: ProcessInfo[], proportional = false): Promise<Map<Role, number>> {
  const memory = new Map<Role, number>();
  for (const info of processes) {
    const status = await readProc(`/proc/${info.pid}/${proportional ? 'smaps_rollup' : 'status'}`);
    const match = status && (proportional ? /^Pss:\s+(\d+) kB/m : /^VmRSS:\s+(\d+) kB/m).exec(status);
    if (!match) continue;
    const role = roleOf(info);
    memory.set(role, (memory.get(role) ?? 0) + Number(match[1]) / 1024);
  }
  return memory;
}

/**
 * Waits until processes spend under `maxBusy` of one core over a second (start-up compilation, migrations and
 * first schedules done), at most `timeoutMs`. Returns the last second's CPU share.
 */
export async function waitUntilIdle(
  processes: () => Promise<ProcessInfo[]>,
  options: { maxBusy: number; timeoutMs: number },
): Promise<number> {
  const deadline = performance.now() + options.timeoutMs;
  let busy = Number.POSITIVE_INFINITY;
  while (performance.now() < deadline) {
    const before = await snapshot(await processes());
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const usage = usageBetween(before, await snapshot(await processes()));
    busy = total(usage.cpu) / usage.seconds;
    if (busy < options.maxBusy) break;
  }
  return busy;
}
