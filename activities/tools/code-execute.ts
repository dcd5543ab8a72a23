/**
 * `code_execute`: runs Python (Pyodide) or JavaScript (QuickJS) in a sandbox and returns `{stdout, stderr, result,
 * files_written}`. Each call is a fresh child process (code-runner.ts) that exits after the one piece of code, so a
 * runaway cannot block or crash the worker and nothing but the sandbox's files outlives a call. Layers, outside in:
 *
 * - OS (`prlimit`, util-linux, when present): RLIMIT_CPU and RLIMIT_AS as backstops, RLIMIT_FSIZE (the quota), no
 *   core files, 256 open files. `unshare --net`
 *   (root, or a user namespace where the kernel allows one) gives the child a network namespace with no interfaces;
 *   where neither works (a default Docker seccomp profile) the child has the host's network, and the in-process
 *   blocks below are what stops it.
 * - Node's permission model: the child reads only the engine's package and the runner's own files, writes only the
 *   sandbox, and may not start processes, workers or addons. eval and `new Function` are disabled. The environment
 *   is empty.
 * - This process: the child's CPU time and resident memory are read from /proc every 100 ms and it is killed past
 *   `cpuMs` (counted once the engine is ready) or `memoryBytes` + 512 MiB (Linux; elsewhere the wall clock stands in
 *   for CPU time); a wall-clock limit for code that sleeps; the engine's start-up has its own deadline; the child's
 *   output is bounded; the turn's abort signal kills it.
 * - Inside (code-runner.ts): WebAssembly memory limit, network APIs removed, process APIs disabled, write quota.
 *
 * Start-up: a Python call takes about 2 s (Pyodide loading; 0.25 s of it is the cost of V8's explicit WebAssembly
 * bounds checks, which RLIMIT_AS needs), a JavaScript call about 0.2 s. There is no pool of pre-started runners: a
 * runner's file permission is fixed when it starts and must be the calling conversation's sandbox, and a fresh
 * process per call is what guarantees nothing leaks between calls. At most one runner per core runs at a time.
 */
import { execFile, spawn } from 'node:child_process';
import { constants, readFileSync } from 'node:fs';
import { access, realpath, unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { RunnerMessage, RunnerRequest } from './code-runner.ts';
import { formatBytes, openSandbox, SANDBOX_MAX_ENTRIES, walkSandbox, type SandboxEntry } from './sandbox.ts';
import { defineTool, ToolError, type ToolContext } from './tool.ts';

export interface CodeLimits {
  /** CPU time the code may use (the engine's start-up not counted). */
  cpuMs: number;
  /** Wall-clock time the code may run (it may sleep or wait). */
  wallMs: number;
  /** Wall-clock time for the engine to start. */
  startupMs: number;
  /** Bytes of WebAssembly memory: the Python or JavaScript heap. */
  memoryBytes: number;
  /** Characters of stdout and stderr together. */
  outputChars: number;
  /** Characters of the JSON result. */
  resultChars: number;
}

export const DEFAULT_CODE_LIMITS: CodeLimits = {
  cpuMs: 10_000,
  wallMs: 15_000,
  // Pyodide loads in about 2 s on an idle core, but several at once on a busy two-core machine took over 12 s.
  startupMs: 20_000,
  memoryBytes: 512 * 1024 * 1024,
  outputChars: 50_000,
  resultChars: 20_000,
};

/**
 * RLIMIT_AS over the memory limit: a backstop only. V8 sizes its reservations by RLIMIT_AS, and a tight one made it
 * fail to commit its young generation now and then (measured at 3 and 4 GiB); 8 GiB above the limit never did.
 */
const addressSpaceOverheadBytes = 8 * 1024 * 1024 * 1024;
/** Resident memory over the WebAssembly limit that the child may use (Node, V8's heap, the engine's code). */
const residentOverheadBytes = 512 * 1024 * 1024;
/** V8's own heap in the child; the code's data lives in WebAssembly memory, outside it. */
const v8HeapMb = 256;
const filesWrittenListed = 100;
const pollMs = 100;
/** The runner interrupts JavaScript at the CPU limit itself; this process kills a moment later. */
const cpuGraceMs = 250;
/** Characters of stdout and of stderr quoted in an error. */
const quotedOutputChars = 10_000;
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on every Linux architecture Node supports). */
const clockTicksPerSecond = 100;

const Input = z.object({
  language: z.enum(['python', 'javascript']).describe('python (3.14, standard library only) or javascript (ES2023)'),
  code: z.string().min(1).max(100_000).describe('The program; the value of its last expression is returned as result'),
});

export interface CodeExecuteOptions {
  /** Use a network namespace when the machine allows one (default true; tests turn it off to try the other layers). */
  networkNamespace?: boolean;
}

export function createCodeExecuteTool(overrides: Partial<CodeLimits> = {}, options: CodeExecuteOptions = {}) {
  const limits = { ...DEFAULT_CODE_LIMITS, ...overrides };
  return defineTool({
    name: 'code_execute',
    description:
      'Runs a Python or JavaScript program in an isolated sandbox and returns its stdout, stderr, the value of its ' +
      'last expression (result) and the files it wrote. Python is CPython in WebAssembly with the standard library ' +
      'only (no pip packages); JavaScript is QuickJS (no Node or browser APIs; console.log, and fs.readFile, ' +
      "fs.writeFile, fs.appendFile, fs.readdir for files). There is no network. The conversation's files are in " +
      '/sandbox, the working directory (file_read, file_write and file_list see the same files); nothing else ' +
      `persists between calls. Limits: ${limits.cpuMs / 1000} s of CPU, ${formatBytes(limits.memoryBytes)} of memory, ` +
      `${limits.outputChars} characters of output.`,
    input: Input,
    timeoutMs: limits.startupMs + limits.wallMs + 5_000,
    retry: { maximumAttempts: 1, initialIntervalMs: 0 },
    maxOutputChars: limits.outputChars + limits.resultChars + 10_000,
    configured: () => true,
    run: (input, context) => execute(input, context, limits, options),
  });
}

export const codeExecuteTool = createCodeExecuteTool();

interface Execution {
  stdout: string;
  stderr: string;
  done?: Extract<RunnerMessage, { type: 'done' }>;
  /** Why this process killed the child, if it did. */
  killed?: string;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  /** The end of the child's own stderr (Node's messages, not the code's). */
  diagnostics: string;
}

async function execute(
  input: z.infer<typeof Input>,
  context: ToolContext,
  limits: CodeLimits,
  options: CodeExecuteOptions,
) {
  const { sandboxQuotaBytes } = context.settings;
  const root = await openSandbox(context.settings, context.conversationId);
  const before = await walkSandbox(root);
  const used = before.reduce((sum, entry) => sum + entry.size, 0);
  const request: RunnerRequest = {
    language: input.language,
    code: input.code,
    sandboxDir: root,
    writeBudgetBytes: Math.max(0, sandboxQuotaBytes - used),
    entryBudget: Math.max(0, SANDBOX_MAX_ENTRIES - before.length),
    memoryBytes: limits.memoryBytes,
    outputChars: limits.outputChars,
    resultChars: limits.resultChars,
    cpuMs: limits.cpuMs,
  };
  const command = await childCommand(request, limits, sandboxQuotaBytes, options);
  const release = await runnerSlot(context.signal);
  let execution: Execution;
  try {
    execution = await runChild(request, command, limits, context);
  } finally {
    release();
  }
  const after = await walkSandbox(root);
  const written = changedFiles(before, after);
  const total = after.reduce((sum, entry) => sum + entry.size, 0);
  if (total > Math.max(sandboxQuotaBytes, used)) {
    // The runner keeps the code within the quota; this is the backstop should anything slip past it.
    await Promise.all(written.map((file) => unlink(path.join(root, file)).catch(() => undefined)));
    throw new ToolError(
      `the code filled the sandbox past its quota of ${formatBytes(sandboxQuotaBytes)}: the files it wrote were deleted`,
    );
  }
  const { stdout, stderr, done } = execution;
  if (!done?.ok) throw new ToolError(failureMessage(execution, input.language, limits, written));
  return {
    stdout,
    stderr,
    result: done.result,
    files_written:
      written.length > filesWrittenListed
        ? [...written.slice(0, filesWrittenListed), `… and ${written.length - filesWrittenListed} more`]
        : written,
  };
}

function changedFiles(before: SandboxEntry[], after: SandboxEntry[]): string[] {
  const previous = new Map(before.map((entry) => [entry.path, `${entry.size}:${entry.mtimeMs}`]));
  return after
    .filter((entry) => entry.type === 'file' && previous.get(entry.path) !== `${entry.size}:${entry.mtimeMs}`)
    .map((entry) => entry.path);
}

function failureMessage(execution: Execution, language: string, limits: CodeLimits, written: string[]): string {
  const parts = [failureReason(execution, language, limits)];
  if (execution.stdout) parts.push(`--- stdout ---\n${tail(execution.stdout)}`);
  if (execution.stderr) parts.push(`--- stderr ---\n${tail(execution.stderr)}`);
  if (written.length > 0) parts.push(`--- files written ---\n${written.slice(0, filesWrittenListed).join('\n')}`);
  return parts.join('\n');
}

function failureReason({ done, killed, exit, diagnostics }: Execution, language: string, limits: CodeLimits): string {
  const memory = `the code ran out of memory (limit ${formatBytes(limits.memoryBytes)})`;
  if (killed) return killed;
  if (done && !done.ok) {
    switch (done.failure) {
      case 'cpu_limit':
        return `the code used more than ${limits.cpuMs / 1000} s of CPU time and was stopped`;
      case 'memory_limit':
        return `${memory}:\n${done.error}`;
      case 'output_limit':
        return done.error;
      case 'exception':
        return `the ${language} code raised an error:\n${done.error}`;
    }
  }
  if (exit.signal === 'SIGXCPU') return 'the code used too much CPU time and was stopped';
  if (exit.signal === 'SIGXFSZ') return 'the code wrote a file larger than the sandbox quota and was stopped';
  if (/out of memory|Failed to reserve|allocation failed|Cannot allocate/i.test(diagnostics)) {
    return `${memory} and was stopped`;
  }
  const lastLines = diagnostics.trim().split('\n').slice(-3).join('\n');
  return `the code runner stopped unexpectedly (${exit.signal ?? `exit code ${exit.code}`})${lastLines ? `:\n${lastLines}` : ''}`;
}

function tail(text: string): string {
  if (text.length <= quotedOutputChars) return text;
  return `… (${text.length - quotedOutputChars} characters before)\n${text.slice(-quotedOutputChars)}`;
}

// ---- the child ----

/** Runners at once in this process (each may take a core and up to a GiB); more calls wait their turn. */
const maxRunners = Math.max(1, availableParallelism());
let runners = 0;
const waiting: (() => void)[] = [];

/** Waits for a runner slot; the function returned gives it back (to the next waiting call, if any). */
async function runnerSlot(signal: AbortSignal): Promise<() => void> {
  const release = () => {
    const next = waiting.shift();
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
      waiting.splice(waiting.indexOf(grant), 1);
      reject(new ToolError('the call was cancelled while it waited for a free runner'));
    };
    waiting.push(grant);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return release;
}

interface ChildCommand {
  file: string;
  args: string[];
}

async function childCommand(
  request: RunnerRequest,
  limits: CodeLimits,
  quotaBytes: number,
  options: CodeExecuteOptions,
): Promise<ChildCommand> {
  const { prlimit, unshare: namespace } = await isolation();
  const unshare = options.networkNamespace === false ? null : namespace;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const ownFiles = ['code-runner.ts', 'sandbox.ts', 'tool.ts'].map((name) => path.join(here, name));
  const readable = [...ownFiles, ...(await enginePackages(request.language)), request.sandboxDir];
  if (readable.some((entry) => entry.includes(','))) {
    // Node would read a comma as a list separator and allow other paths than meant.
    throw new Error(`code_execute cannot run with a comma in a path: ${readable.join(' ')}`);
  }
  const node = [
    process.execPath,
    '--permission',
    ...readable.map((entry) => `--allow-fs-read=${entry}`),
    `--allow-fs-write=${request.sandboxDir}`,
    '--disallow-code-generation-from-strings',
    `--max-old-space-size=${v8HeapMb}`,
    ...(prlimit ? ['--disable-wasm-trap-handler'] : []),
    '--no-warnings',
    ownFiles[0]!,
  ];
  const cpuSeconds = Math.ceil((limits.startupMs + limits.cpuMs) / 1000) + 2;
  const rlimits = prlimit
    ? [
        prlimit,
        `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
        `--as=${Math.round(limits.memoryBytes + addressSpaceOverheadBytes)}`,
        `--fsize=${Math.max(quotaBytes, 1)}`,
        '--core=0',
        '--nofile=256',
        '--',
      ]
    : [];
  const command = [...rlimits, ...(unshare ?? []), ...node];
  return { file: command[0]!, args: command.slice(1) };
}

function runChild(request: RunnerRequest, command: ChildCommand, limits: CodeLimits, context: ToolContext) {
  return new Promise<Execution>((resolve, reject) => {
    const child = spawn(command.file, command.args, { cwd: request.sandboxDir, env: {}, stdio: 'pipe' });
    const execution: Execution = { stdout: '', stderr: '', exit: { code: null, signal: null }, diagnostics: '' };
    const kill = (reason: string) => {
      execution.killed ??= reason;
      child.kill('SIGKILL');
    };
    const startup = setTimeout(
      () => kill(`the ${request.language} engine did not start within ${limits.startupMs / 1000} s`),
      limits.startupMs,
    );
    let deadline: NodeJS.Timeout | undefined;
    let exitGrace: NodeJS.Timeout | undefined;
    const onAbort = () => kill('the call was cancelled');
    if (context.signal.aborted) onAbort();
    context.signal.addEventListener('abort', onAbort, { once: true });

    // CPU time (counted from the moment the engine is ready) and resident memory, from /proc.
    const maxResident = limits.memoryBytes + residentOverheadBytes;
    let ready = false;
    let cpuAtReady: number | null = null;
    const watchdog = setInterval(() => {
      const usage = child.pid === undefined ? null : processUsage(child.pid);
      if (!usage) return;
      if (usage.residentBytes > maxResident) {
        kill(`the code used more than ${formatBytes(maxResident)} of memory and was stopped`);
      } else if (cpuAtReady !== null && usage.cpuMs - cpuAtReady > limits.cpuMs + cpuGraceMs) {
        kill(`the code used more than ${limits.cpuMs / 1000} s of CPU time and was stopped`);
      }
    }, pollMs);
    const onReady = () => {
      if (ready) return;
      ready = true;
      clearTimeout(startup);
      cpuAtReady = child.pid === undefined ? null : (processUsage(child.pid)?.cpuMs ?? null);
      // Without /proc, the wall clock stands in for the CPU limit.
      const wallMs = cpuAtReady === null ? Math.min(limits.wallMs, limits.cpuMs + cpuGraceMs) : limits.wallMs;
      deadline = setTimeout(() => kill(`the code did not finish within ${wallMs / 1000} s and was stopped`), wallMs);
    };
    const onMessage = (message: RunnerMessage) => {
      if (message.type === 'ready') onReady();
      else if (message.type === 'stdout' || message.type === 'stderr') {
        execution[message.type] = (execution[message.type] + message.text).slice(0, limits.outputChars);
      } else if (message.type === 'done' && !execution.done) {
        execution.done = message;
        exitGrace = setTimeout(() => child.kill('SIGKILL'), 1_000); // the runner exits right after
      }
    };

    // One JSON line per message. The runner bounds the code's output; this bounds the runner.
    const maxChars = (limits.outputChars + limits.resultChars) * 8 + 1024 * 1024;
    let received = 0;
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      received += chunk.length;
      if (received > maxChars) return kill('the code runner sent more output than allowed');
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        try {
          onMessage(JSON.parse(line) as RunnerMessage);
        } catch {
          // not a message: ignored
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      execution.diagnostics = (execution.diagnostics + chunk).slice(-4_096);
    });
    child.stdin.on('error', () => undefined); // the child may die before reading its request
    child.stdin.end(JSON.stringify(request));

    const cleanUp = () => {
      clearTimeout(startup);
      clearTimeout(deadline);
      clearTimeout(exitGrace);
      clearInterval(watchdog);
      context.signal.removeEventListener('abort', onAbort);
    };
    child.on('error', (error) => {
      cleanUp();
      reject(error);
    });
    child.on('close', (code, signal) => {
      cleanUp();
      execution.exit = { code, signal };
      resolve(execution);
    });
  });
}

const pageBytes = 4096;

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
function enginePackages(language: RunnerRequest['language']): Promise<string[]> {
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
