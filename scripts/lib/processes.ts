/**
 * Child process trees, for the tools that run the platform as users do (the bench, the crash test): spawn in a
 * process group of its own, wait for HTTP, list every descendant from /proc (PostgreSQL's backends start sessions of
 * their own, so a group signal misses them), and find free ports. Linux /proc for the process listings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Child {
  name: string;
  process: ChildProcess;
  exited: Promise<number | null>;
  /** The last lines it printed (stdout and stderr). */
  output(lines?: number): string;
  /** SIGKILL to the group, then to whatever else descends from it, all at once. */
  signalGroup(signal: NodeJS.Signals): void;
  /** SIGTERM (it drains), then SIGKILL to the group after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns `command` in its own process group; its output goes to `logFile` (appended) and a ring of recent lines. */
export function startChild(options: {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd?: string;
  logFile?: string;
}): Child {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : null;
  const recent: string[] = [];
  const collect = (chunk: Buffer) => {
    log?.write(chunk);
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      recent.push(line);
      if (recent.length > 400) recent.shift();
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => log?.end());
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone
    }
  };
  // Its own group outlives this process: never leave it running when this process exits without stopping it.
  const onExit = () => signalGroup('SIGKILL');
  process.once('exit', onExit);
  void exited.then(() => process.removeListener('exit', onExit));
  return {
    name: options.name,
    process: child,
    exited,
    output: (lines = 60) => recent.slice(-lines).join('\n'),
    signalGroup,
    async stop(graceMs = 30_000) {
      if (child.exitCode === null && child.signalCode === null) {
        // npm forwards SIGTERM to its script; the platform drains and stops its own children.
        child.kill('SIGTERM');
        const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // Whatever of the group outlived its leader goes too.
      signalGroup('SIGKILL');
    },
  };
}

/** Polls `url` until it answers 2xx; throws with the child's last output if it exits first or time runs out. */
export async function waitForHttp(url: string, child: Child, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${child.name} exited before answering ${url}:\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // not up yet
    }
    await sleep(250);
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs / 1000} s:\n${child.output()}`);
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
  /** Process state letter (R, S, D, Z…). */
  state: string;
}

async function readProc(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Every process on the machine with its parent, name, command line and state. */
export async function listProcesses(): Promise<ProcessInfo[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const processes: ProcessInfo[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readProc(`/proc/${entry}/stat`);
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = ((await readProc(`/proc/${entry}/cmdline`)) ?? '').replaceAll('\0', ' ').trim();
    processes.push({ pid: Number(entry), ppid: Number(ppid), comm, cmdline, state: state ?? '' });
  }
  return processes;
}

/** The processes under `rootPid` (itself included). */
export async function processTree(rootPid: number): Promise<ProcessInfo[]> {
  const all = await listProcesses();
  const children = new Map<number, ProcessInfo[]>();
  for (const info of all) children.set(info.ppid, [...(children.get(info.ppid) ?? []), info]);
  const tree: ProcessInfo[] = [];
  const queue = all.filter((info) => info.pid === rootPid);
  while (queue.length) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(children.get(next.pid) ?? []));
  }
  return tree;
}

/** Whether a process exists and is not a zombie. */
export async function isRunning(pid: number): Promise<boolean> {
  const stat = await readProc(`/proc/${pid}/stat`);
  if (stat === undefined) return false;
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  return state !== 'Z' && state !== 'X';
}

/** `count` distinct TCP ports free on 127.0.0.1 right now. */
export async function freePorts(count: number): Promise<number[]> {
  // Below Linux's ephemeral range (32768–60999): a port the system hands out for `listen(0)` or an outgoing
  // connection (the Temporal dev server's internal listeners, say, when a killed platform restarts) never lands on
  // one of these, so a port chosen here stays free until its process binds it.
  const ports: number[] = [];
  for (let tries = 0; ports.length < count && tries < 1000; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.includes(port) && (await bindable(port))) ports.push(port);
  }
  if (ports.length < count) throw new Error(`no ${count} free ports between 20000 and 32000`);
  return ports;
}

/**
 * The first of `count` consecutive TCP ports free on 127.0.0.1 right now (below the ephemeral range, as above), for
 * a program that takes a block from one base port (`npm run cluster`'s API processes, the Temporal server's services).
 * `avoid` lists ports already handed out that the block must not contain.
 */
export async function freePortRange(count: number, avoid: number[] = []): Promise<number> {
  for (let tries = 0; tries < 1000; tries++) {
    const base = 20_000 + Math.floor(Math.random() * (12_000 - count));
    const block = Array.from({ length: count }, (_, index) => base + index);
    if (block.some((port) => avoid.includes(port))) continue;
    let free = true;
    for (const port of block) {
      if (!(await bindable(port))) {
        free = false;
        break;
      }
    }
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports between 20000 and 32000`);
}

/** Whether `port` can be bound on `host` right now. */
export function bindable(port: number, host = '127.0.0.1'): Promise<boolean> {
  const server: Server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
