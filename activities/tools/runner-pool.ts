/**
 * The parent's side of code-runner.ts for code_execute: starting runners (ahead of calls), handing one the calling
 * conversation's sandbox, watching it until it exits, and carrying what the code did back into the sandbox.
 *
 * Why runners start ahead, and how a runner started ahead gets a sandbox it could not know when it started.
 * Loading Pyodide takes about 2.5 s (much longer on a busy machine), QuickJS about 0.2 s; a call should neither
 * wait for that nor have it counted against its limits. But a runner's file permission (Node's permission model) is
 * fixed when it starts, and it must never reach past the calling conversation's sandbox. Granting the sandbox root
 * and narrowing it later is not possible (`process.permission.drop` only drops a grant whole), and a symbolic link
 * to the sandbox would rely on the permission model following links, which it documents as a gap rather than a
 * feature. So each runner starts with a staging directory of its own, empty, under `<SANDBOX_DIR>/.runners/`: the one
 * place it may read or write. When a call comes, the call's sandbox is hard-linked into it (`stage`: every file a
 * second name for the same inode, every directory made), so the code reads and writes the sandbox's own files in
 * place; after the runner exits, what the code created, replaced, renamed or deleted is done in the sandbox too
 * (`unstage`), and the staging directory is removed. A runner sees only the files of the one call it runs, and runs
 * one call: a fresh process per call, as before, with nothing outliving it but the sandbox's files.
 *
 * Each language and sandbox setting has a pool keeping one runner started and waiting (`RunnerPool.warm`); the call
 * that takes it starts the next. A call that finds none starts its own and waits for it, up to the start-up bound
 * (ENGINE_STARTUP_TIMEOUT_MS); either way its CPU and wall-clock limits count from when its code is sent.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import { access, link, lstat, mkdir, readdir, realpath, rename, rm, rmdir, unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CodeLimits } from './code-execute.ts';
import type { RunnerCall, RunnerMessage, RunnerSetup } from './code-runner.ts';
import { formatBytes, makePrivateDirectory, SANDBOX_MAX_ENTRIES } from './sandbox.ts';
import { ToolError } from './tool.ts';

export type Language = RunnerSetup['language'];

/** What a runner is started with: all of it fixed for its life. */
export interface RunnerOptions {
  language: Language;
  limits: CodeLimits;
  /** `SANDBOX_DIR`: the staging directories live in it, on the same file system as the sandboxes (hard links). */
  sandboxRoot: string;
  /** The sandbox quota: the largest file the runner may write (RLIMIT_FSIZE). */
  quotaBytes: number;
  /** Use a network namespace when the machine allows one. */
  networkNamespace: boolean;
  /** Test seam: the runner's start-up takes this much longer (see RunnerSetup). */
  startupDelayMs?: number;
}

/** A call's run, as the parent saw it. */
export interface Execution {
  stdout: string;
  stderr: string;
  done?: Extract<RunnerMessage, { type: 'done' }>;
  /** Why this process killed the child, if it did. */
  killed?: string;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  /** The end of the child's own stderr (Node's messages, not the code's). */
  diagnostics: string;
}

/**
 * RLIMIT_AS over the memory limit: a backstop only. V8 sizes its reservations by RLIMIT_AS, and a tight one made it
 * fail to commit its young generation now and then (measured at 3 and 4 GiB); 8 GiB above the limit never did.
 */
const addressSpaceOverheadBytes = 8 * 1024 * 1024 * 1024;
/** Resident memory over the WebAssembly limit that the child may use (Node, V8's heap, the engine's code). */
const residentOverheadBytes = 512 * 1024 * 1024;
/** V8's own heap in the child; the code's data lives in WebAssembly memory, outside it. */
const v8HeapMb = 256;
const pollMs = 100;
/** The runner interrupts JavaScript at the CPU limit itself; this process kills a moment later. */
const cpuGraceMs = 250;
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on every Linux architecture Node supports). */
const clockTicksPerSecond = 100;
const pageBytes = 4096;
/** A staging directory left by a process that died mid-call is removed by the next process after this long. */
const staleStagingMs = 24 * 60 * 60_000;

// ---- one runner ----

export class Runner {
  /** Resolves once the engine is loaded and waiting for its call; rejects with why it did not get there. */
  readonly ready: Promise<void>;
  /** Resolves once the child has exited (or never started). */
  readonly closed: Promise<void>;
  private readonly options: RunnerOptions;
  private child: ChildProcess | undefined;
  private staging = '';
  private readonly execution: Execution = {
    stdout: '',
    stderr: '',
    exit: { code: null, signal: null },
    diagnostics: '',
  };
  private isReady = false;
  /** A call holds it (`hold`). */
  private held = false;
  private exited = false;
  /** A call was handed to it: from then on the call owns the staging directory. */
  private taken = false;
  private settleClosed: () => void = () => undefined;
  /** Where messages go once a call runs. */
  private onMessage: (message: RunnerMessage) => void = () => undefined;

  constructor(options: RunnerOptions) {
    this.options = options;
    this.closed = new Promise((resolve) => (this.settleClosed = resolve));
    this.ready = this.start();
    // Nobody may be waiting for a spare's start-up: its failure must not be an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /** Whether it can still take a call (not exited, not taken). */
  get usable(): boolean {
    return !this.taken && !this.exited;
  }

  /**
   * Keeps this process alive for the runner: a call is waiting for it or running it. A runner nobody waits for yet
   * (a spare) must not hold the process open.
   */
  hold(): void {
    this.held = true;
    this.reference(true);
  }

  private reference(on: boolean): void {
    const child = this.child;
    if (!child) return;
    for (const handle of [child, child.stdin, child.stdout, child.stderr]) {
      const referable = handle as { ref?: () => void; unref?: () => void } | null;
      if (on) referable?.ref?.();
      else referable?.unref?.();
    }
  }

  /** Ends a runner that will run no call (shutdown, a call cancelled while it started). */
  discard(): void {
    this.kill('discarded');
  }

  private kill(reason: string): void {
    this.execution.killed ??= reason;
    this.child?.kill('SIGKILL');
  }

  private async start(): Promise<void> {
    const { language, limits } = this.options;
    try {
      this.staging = await newStagingDirectory(this.options.sandboxRoot);
      const command = await childCommand(this.options, this.staging);
      if (this.execution.killed) throw new ToolError(this.execution.killed);
      this.child = spawn(command.file, command.args, { cwd: this.staging, env: {}, stdio: 'pipe' });
    } catch (error) {
      this.exited = true;
      this.settleClosed();
      if (this.staging) await rm(this.staging, { recursive: true, force: true });
      throw error;
    }
    const child = this.child;
    this.reference(this.held);

    const startup = setTimeout(
      () => this.kill(`the ${language} engine did not start within ${limits.startupMs / 1000} s`),
      limits.startupMs,
    );
    startup.unref();
    let markReady: () => void = () => undefined;
    let failStart: (error: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });

    // One JSON line per message. The runner bounds the code's output; this bounds the runner.
    const maxChars = (limits.outputChars + limits.resultChars) * 8 + 1024 * 1024;
    let received = 0;
    let pending = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      received += chunk.length;
      if (received > maxChars) return this.kill('the code runner sent more output than allowed');
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        let message: RunnerMessage;
        try {
          message = JSON.parse(line) as RunnerMessage;
        } catch {
          continue; // not a message: ignored
        }
        if (message.type === 'ready' && !this.isReady) {
          this.isReady = true;
          clearTimeout(startup);
          markReady();
        } else if (message.type === 'done' && !message.ok && !this.taken) {
          this.execution.diagnostics += `\n${message.error}`; // the engine failed to load
        } else {
          this.onMessage(message);
        }
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      this.execution.diagnostics = (this.execution.diagnostics + chunk).slice(-4_096);
    });
    child.stdin!.on('error', () => undefined); // the child may die before reading what it is sent
    const setup: RunnerSetup = {
      language,
      sandboxDir: this.staging,
      memoryBytes: limits.memoryBytes,
      outputChars: limits.outputChars,
      resultChars: limits.resultChars,
      cpuMs: limits.cpuMs,
      ...(this.options.startupDelayMs ? { startupDelayMs: this.options.startupDelayMs } : {}),
    };
    child.stdin!.write(`${JSON.stringify(setup)}\n`);

    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.exited) return;
      this.exited = true;
      clearTimeout(startup);
      this.execution.exit = { code, signal };
      if (!this.isReady) failStart(new ToolError(this.startFailure()));
      // A runner that ran no call leaves nothing to carry over: its staging directory simply goes.
      const cleanUp = this.taken ? Promise.resolve() : rm(this.staging, { recursive: true, force: true });
      void cleanUp.catch(() => undefined).then(() => this.settleClosed());
    };
    child.on('error', (error) => {
      this.execution.diagnostics += `\n${error.message}`;
      exited(null, null);
    });
    child.on('close', exited);
    return ready;
  }

  private startFailure(): string {
    const { killed, exit, diagnostics } = this.execution;
    if (killed) return killed;
    const lastLines = diagnostics.trim().split('\n').slice(-3).join('\n');
    return `the ${this.options.language} engine stopped before it was ready (${exit.signal ?? `exit code ${exit.code}`})${lastLines ? `:\n${lastLines}` : ''}`;
  }

  /**
   * Runs the call's code with the sandbox at `sandboxDir` (a real path) and resolves once the runner has exited
   * and what the code did is in the sandbox. Call it once, after `ready`.
   */
  async run(call: RunnerCall, sandboxDir: string, signal: AbortSignal): Promise<Execution> {
    if (this.taken || !this.isReady || !this.child) throw new Error('a runner runs one call, once it is ready');
    if (!this.usable)
      throw new ToolError(this.execution.killed ?? 'the code runner stopped before the code reached it');
    this.taken = true;
    const child = this.child;
    const { limits } = this.options;
    const execution = this.execution;
    let staged: StagedEntries;
    try {
      staged = await stage(sandboxDir, this.staging);
    } catch (error) {
      this.kill('the sandbox could not be staged');
      await this.closed;
      await rm(this.staging, { recursive: true, force: true });
      throw new ToolError(`the sandbox could not be given to the code runner: ${(error as Error).message}`);
    }

    let exitGrace: NodeJS.Timeout | undefined;
    const onAbort = () => this.kill('the call was cancelled');
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    this.onMessage = (message) => {
      if (message.type === 'stdout' || message.type === 'stderr') {
        execution[message.type] = (execution[message.type] + message.text).slice(0, limits.outputChars);
      } else if (message.type === 'done' && !execution.done) {
        execution.done = message;
        exitGrace = setTimeout(() => child.kill('SIGKILL'), 1_000); // the runner exits right after
      }
    };

    // CPU time (counted from the moment the code is sent: the engine's loading is not the code's) and resident
    // memory, from /proc.
    const maxResident = limits.memoryBytes + residentOverheadBytes;
    const cpuAtStart = child.pid === undefined ? null : (processUsage(child.pid)?.cpuMs ?? null);
    const cpuLimitReached = `the code used more than ${limits.cpuMs / 1000} s of CPU time and was stopped`;
    const watchdog = setInterval(() => {
      const usage = child.pid === undefined ? null : processUsage(child.pid);
      if (!usage) return;
      if (usage.residentBytes > maxResident) {
        this.kill(`the code used more than ${formatBytes(maxResident)} of memory and was stopped`);
      } else if (cpuAtStart !== null && usage.cpuMs - cpuAtStart > limits.cpuMs + cpuGraceMs) {
        this.kill(cpuLimitReached);
      }
    }, pollMs);
    // Without /proc, the wall clock stands in for the CPU limit.
    const wallMs = cpuAtStart === null ? Math.min(limits.wallMs, limits.cpuMs + cpuGraceMs) : limits.wallMs;
    // Whichever limit the code reaches first stops it, and the error names that one. On a busy machine code that
    // never stops may get less than `cpuMs` of CPU within `wallMs` (a quarter of a core for 2 s in 8 s): the wall
    // clock then stops it, and the error says how much CPU time it had (so a starved loop is told from a sleeping
    // program). The CPU time is read again here rather than trusted to the last poll: this process may itself have
    // been starved, its poll and this timer running late together, and code past its CPU limit is reported as such.
    const deadline = setTimeout(() => {
      const usage = cpuAtStart === null || child.pid === undefined ? null : processUsage(child.pid);
      if (usage && usage.cpuMs - cpuAtStart! > limits.cpuMs) return this.kill(cpuLimitReached);
      const used = usage ? ` (it had used ${((usage.cpuMs - cpuAtStart!) / 1000).toFixed(1)} s of CPU time)` : '';
      this.kill(`the code did not finish within ${wallMs / 1000} s and was stopped${used}`);
    }, wallMs);
    child.stdin!.end(`${JSON.stringify(call)}\n`);

    try {
      await this.closed;
    } finally {
      clearTimeout(deadline);
      clearTimeout(exitGrace);
      clearInterval(watchdog);
      signal.removeEventListener('abort', onAbort);
    }
    try {
      await unstage(this.staging, sandboxDir, staged);
    } finally {
      await rm(this.staging, { recursive: true, force: true });
    }
    return execution;
  }
}

// ---- runners started ahead ----

/** Runners of one kind (language, limits, sandbox settings), with one started and waiting once `warm` was called. */
export class RunnerPool {
  private readonly options: RunnerOptions;
  private waiting: Runner | null = null;
  private keepWarm = false;

  constructor(options: RunnerOptions) {
    this.options = options;
  }

  /** Keeps a runner started and waiting from now on; resolves once the first one is ready (rejects if it fails). */
  warm(): Promise<void> {
    this.keepWarm = true;
    return this.spare().ready;
  }

  /** A runner for one call: the waiting one (ready or still starting), else a new one; a warm pool starts the next. */
  take(): Runner {
    const waiting = this.waiting?.usable ? this.waiting : null;
    this.waiting = null;
    const runner = waiting ?? new Runner(this.options);
    if (this.keepWarm) this.spare();
    return runner;
  }

  /** Ends the waiting runner and the warm start (tests, shutdown). */
  close(): void {
    this.keepWarm = false;
    this.waiting?.discard();
    this.waiting = null;
  }

  private spare(): Runner {
    if (this.waiting?.usable) return this.waiting;
    const runner = new Runner(this.options);
    this.waiting = runner;
    // A spare that ends while it waits (a start-up failure, killed from outside) is dropped, not restarted in a
    // loop: the next call starts one.
    void runner.closed.then(() => {
      if (this.waiting === runner) this.waiting = null;
    });
    return runner;
  }
}

/** Runners running code at once in this process (each may take a core and up to a GiB); more calls wait their turn. */
const maxRunners = Math.max(1, availableParallelism());
let runners = 0;
const waitingForSlot: (() => void)[] = [];

/** Waits for a runner slot; the function returned gives it back (to the next waiting call, if any). */
export async function runnerSlot(signal: AbortSignal): Promise<() => void> {
  const release = () => {
    const next = waitingForSlot.shift();
    if (next) next();
    else runners -= 1;
  };
  if (runners < maxRunners) {
    runners += 1;
    return release;
  }
  await new Promise<void>((resolve, reject) => {
    const grant = () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = () => {
      waitingForSlot.splice(waitingForSlot.indexOf(grant), 1);
      reject(new ToolError('the call was cancelled while it waited for a free runner'));
    };
    waitingForSlot.push(grant);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return release;
}

// ---- the staging directory ----

type StagedEntries = Map<string, { type: 'file' | 'directory'; inode: number }>;

const sweptRoots = new Set<string>();

/** A new, empty staging directory (a real path) under `<sandboxRoot>/.runners/`. */
async function newStagingDirectory(sandboxRoot: string): Promise<string> {
  const root = path.join(path.resolve(sandboxRoot), '.runners');
  await makePrivateDirectory(path.resolve(sandboxRoot));
  await makePrivateDirectory(root);
  if (!sweptRoots.has(root)) {
    sweptRoots.add(root);
    await sweepStaleStaging(root);
  }
  const directory = path.join(await realpath(root), randomUUID());
  await mkdir(directory, { mode: 0o700 });
  return directory;
}

/**
 * Removes staging directories a process left when it died mid-call. Another process's directory this old belongs
 * to a runner that has waited a day for a call: `stage` makes the directory again if it is gone (the runner's
 * permission is for the path, not for the directory that was there).
 */
async function sweepStaleStaging(root: string): Promise<void> {
  for (const name of await readdir(root).catch(() => [])) {
    const directory = path.join(root, name);
    const stat = await lstat(directory).catch(() => null);
    if (stat && Date.now() - stat.mtimeMs > staleStagingMs) {
      await rm(directory, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** The sandbox's tree in the staging directory: directories made, files hard-linked (the same inodes). */
async function stage(sandboxDir: string, staging: string): Promise<StagedEntries> {
  await mkdir(staging, { recursive: true, mode: 0o700 });
  const staged: StagedEntries = new Map();
  const visit = async (relative: string): Promise<void> => {
    for (const name of (await readdir(path.join(sandboxDir, relative))).sort()) {
      if (staged.size >= SANDBOX_MAX_ENTRIES * 2) return;
      const entry = relative ? `${relative}/${name}` : name;
      const stat = await lstat(path.join(sandboxDir, entry)).catch(() => null);
      if (stat?.isDirectory()) {
        await mkdir(path.join(staging, entry), { mode: 0o700 });
        staged.set(entry, { type: 'directory', inode: stat.ino });
        await visit(entry);
      } else if (stat?.isFile()) {
        await link(path.join(sandboxDir, entry), path.join(staging, entry));
        staged.set(entry, { type: 'file', inode: stat.ino });
      }
    }
  };
  await visit('');
  return staged;
}

/**
 * What the code did in the staging directory, done in the sandbox: what it deleted (or turned into another kind of
 * entry) deleted, its new directories made, its new or replaced files moved in. Files written in place are the
 * sandbox's own already. Only files and directories are carried; an entry the sandbox got meanwhile from another
 * tool is left alone. Nothing here follows a link: every entry is looked at with lstat.
 */
async function unstage(staging: string, sandboxDir: string, staged: StagedEntries): Promise<void> {
  const now = await entriesOf(staging);
  // Deepest first, so a directory is empty by the time it is removed.
  for (const [entry, before] of [...staged].reverse()) {
    if (now.get(entry)?.type === before.type) continue;
    const target = path.join(sandboxDir, entry);
    const current = await lstat(target).catch(() => null);
    if (current?.ino !== before.inode) continue;
    await ignoreRaces(before.type === 'file' ? unlink(target) : rmdir(target));
  }
  // Parents first (the walk's order).
  for (const [entry, after] of now) {
    const target = path.join(sandboxDir, entry);
    const current = await lstat(target).catch(() => null);
    if (after.type === 'directory') {
      if (!current) await ignoreRaces(mkdir(target, { mode: 0o700 }));
    } else if (current?.ino !== after.inode && (!current || current.isFile())) {
      await ignoreRaces(rename(path.join(staging, entry), target));
    }
  }
}

/** Files and directories under `root`, parents before their children; links and other kinds left out. */
async function entriesOf(root: string): Promise<StagedEntries> {
  const entries: StagedEntries = new Map();
  const visit = async (relative: string): Promise<void> => {
    for (const name of (await readdir(path.join(root, relative))).sort()) {
      if (entries.size >= SANDBOX_MAX_ENTRIES * 2) return;
      const entry = relative ? `${relative}/${name}` : name;
      const stat = await lstat(path.join(root, entry)).catch(() => null);
      if (stat?.isDirectory()) {
        entries.set(entry, { type: 'directory', inode: stat.ino });
        await visit(entry);
      } else if (stat?.isFile()) {
        entries.set(entry, { type: 'file', inode: stat.ino });
      }
    }
  };
  await visit('');
  return entries;
}

/** Another tool may change the sandbox while code runs: what it moved or filled first is not an error. */
async function ignoreRaces(operation: Promise<unknown>): Promise<void> {
  try {
    await operation;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!['ENOENT', 'ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY'].includes(code ?? '')) throw error;
  }
}

// ---- the child's command ----

interface ChildCommand {
  file: string;
  args: string[];
}

async function childCommand(options: RunnerOptions, staging: string): Promise<ChildCommand> {
  const { limits } = options;
  const { prlimit, unshare: namespace } = await isolation();
  const unshare = options.networkNamespace ? namespace : null;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const ownFiles = ['code-runner.ts', 'sandbox.ts', 'tool.ts'].map((name) => path.join(here, name));
  const readable = [...ownFiles, ...(await enginePackages(options.language)), staging];
  if (readable.some((entry) => entry.includes(','))) {
    // Node would read a comma as a list separator and allow other paths than meant.
    throw new Error(`code_execute cannot run with a comma in a path: ${readable.join(' ')}`);
  }
  const node = [
    process.execPath,
    '--permission',
    ...readable.map((entry) => `--allow-fs-read=${entry}`),
    `--allow-fs-write=${staging}`,
    '--disallow-code-generation-from-strings',
    `--max-old-space-size=${v8HeapMb}`,
    ...(prlimit ? ['--disable-wasm-trap-handler'] : []),
    '--no-warnings',
    ownFiles[0]!,
  ];
  // The engine's start-up and the code's CPU time: a backstop behind this process's own count.
  const cpuSeconds = Math.ceil((limits.startupMs + limits.cpuMs) / 1000) + 2;
  const rlimits = prlimit
    ? [
        prlimit,
        `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
        `--as=${Math.round(limits.memoryBytes + addressSpaceOverheadBytes)}`,
        `--fsize=${Math.max(options.quotaBytes, 1)}`,
        '--core=0',
        '--nofile=256',
        '--',
      ]
    : [];
  const command = [...rlimits, ...(unshare ?? []), ...node];
  return { file: command[0]!, args: command.slice(1) };
}

/** CPU time (utime + stime) and resident memory of a process; null without /proc or once the process is gone. */
function processUsage(pid: number): { cpuMs: number; residentBytes: number } | null {
  try {
    // Synchronous on purpose: /proc reads do not block, and a poll must not queue behind another.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const resident = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return { cpuMs: (ticks * 1000) / clockTicksPerSecond, residentBytes: resident * pageBytes };
  } catch {
    return null;
  }
}

// ---- what the machine offers ----

interface Isolation {
  /** Path of util-linux's prlimit, when installed. */
  prlimit: string | null;
  /** The `unshare` command prefix that gives the child an empty network namespace, when the kernel allows it. */
  unshare: string[] | null;
}

let isolationProbe: Promise<Isolation> | undefined;

/** What isolation this machine offers, probed once per process. */
function isolation(): Promise<Isolation> {
  isolationProbe ??= (async () => {
    const prlimit = await findBinary('prlimit');
    const unshareBinary = await findBinary('unshare');
    let unshare: string[] | null = null;
    for (const flags of [['--net'], ['--user', '--map-root-user', '--net']]) {
      if (!unshareBinary) break;
      const prefix = [unshareBinary, ...flags, '--'];
      if (await succeeds(prefix[0]!, [...prefix.slice(1), process.execPath, '-e', '0'])) {
        unshare = prefix;
        break;
      }
    }
    return { prlimit, unshare };
  })();
  return isolationProbe;
}

async function findBinary(name: string): Promise<string | null> {
  for (const directory of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(directory, name);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return null;
}

function succeeds(file: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(file, args, { env: {}, timeout: 5_000 }, (error) => resolve(error === null));
  });
}

const enginePackageNames = {
  python: ['pyodide'],
  javascript: [
    'quickjs-emscripten',
    'quickjs-emscripten-core',
    '@jitl/quickjs-ffi-types',
    '@jitl/quickjs-wasmfile-release-sync',
    '@jitl/quickjs-wasmfile-release-asyncify',
    '@jitl/quickjs-wasmfile-debug-sync',
    '@jitl/quickjs-wasmfile-debug-asyncify',
  ],
} as const;

const enginePackageDirectories = new Map<string, Promise<string[]>>();

/** The directories (real paths) of the packages the runner loads for a language: all it may read besides itself. */
function enginePackages(language: Language): Promise<string[]> {
  let directories = enginePackageDirectories.get(language);
  if (!directories) {
    const [main] = enginePackageNames[language];
    const mainDirectory = packageDirectory(main, import.meta.url);
    directories = Promise.all(
      enginePackageNames[language].map((name) =>
        realpath(name === main ? mainDirectory : packageDirectory(name, path.join(mainDirectory, 'package.json'))),
      ),
    );
    enginePackageDirectories.set(language, directories);
  }
  return directories;
}

function packageDirectory(name: string, from: string): string {
  const suffix = path.join('node_modules', ...name.split('/'));
  let directory = path.dirname(createRequire(from).resolve(name));
  while (!directory.endsWith(suffix)) {
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error(`cannot find the directory of the package ${name}`);
    directory = parent;
  }
  return directory;
}
