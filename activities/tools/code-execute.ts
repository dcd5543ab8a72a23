/**
 * `code_execute`: runs Python (Pyodide) or JavaScript (QuickJS) in a sandbox and returns `{stdout, stderr, result,
 * files_written}`. Each call is a fresh child process (code-runner.ts, started and watched by runner-pool.ts) that
 * exits after the one piece of code, so a runaway cannot block or crash the worker and nothing but the sandbox's
 * files outlives a call. Layers, outside in:
 *
 * - OS (`prlimit`, util-linux, when present): RLIMIT_CPU and RLIMIT_AS as backstops, RLIMIT_FSIZE (the quota), no
 *   core files, 256 open files. `unshare --net`
 *   (root, or a user namespace where the kernel allows one) gives the child a network namespace with no interfaces;
 *   where neither works (a default Docker seccomp profile) the child has the host's network, and the in-process
 *   blocks below are what stops it.
 * - Node's permission model: the child reads only the engine's package and the runner's own files, reads and
 *   writes only its staging directory (where the calling conversation's sandbox, and nothing else, is hard-linked in
 *   when the call comes: see runner-pool.ts), and may not start processes, workers or addons. eval and
 *   `new Function` are disabled. The environment is empty.
 * - This process: the child's CPU time and resident memory are read from /proc every 100 ms and it is killed past
 *   `cpuMs` or `memoryBytes` + 512 MiB (Linux; elsewhere the wall clock stands in for CPU time); a wall-clock limit
 *   for code that sleeps; the child's output is bounded; the turn's abort signal kills it.
 * - Inside (code-runner.ts): WebAssembly memory limit, network APIs removed, process APIs disabled, write quota.
 *
 * The limits count from when the code is sent to a ready runner, never the engine's start-up: loading takes about
 * 2.5 s for Pyodide (0.25 s of it the cost of V8's explicit WebAssembly bounds checks, which RLIMIT_AS needs) and
 * 0.2 s for QuickJS on a quiet machine, several times that on a busy one. Runners are started ahead of calls
 * (`warm`, at process start, for the languages in `warmAtStart`), so a call usually finds one ready; one that does
 * not waits for its runner to start, up to `startupMs` (ENGINE_STARTUP_TIMEOUT_MS). At most one runner per core
 * runs code at a time.
 */
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { RunnerCall } from './code-runner.ts';
import { RunnerPool, runnerSlot, type Execution, type Language, type Runner } from './runner-pool.ts';
import { formatBytes, openSandbox, SANDBOX_MAX_ENTRIES, walkSandbox, type SandboxEntry } from './sandbox.ts';
import { defineTool, ENGINE_STARTUP_TIMEOUT_MS, ToolError, type ToolContext } from './tool.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';

export interface CodeLimits {
  /** CPU time the code may use, from when it is sent to a ready runner (the engine's start-up not counted). */
  cpuMs: number;
  /** Wall-clock time the code may run (it may sleep or wait), from when it is sent. */
  wallMs: number;
  /** Wall-clock time for the engine to start: a slow start-up is waited for, up to this. */
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
  startupMs: ENGINE_STARTUP_TIMEOUT_MS,
  memoryBytes: 512 * 1024 * 1024,
  outputChars: 50_000,
  resultChars: 20_000,
};

const filesWrittenListed = 100;
/** Characters of stdout and of stderr quoted in an error. */
const quotedOutputChars = 10_000;
/**
 * A process starts the runners of the languages in ENGINES_WARM_AT_START when it starts (default none:
 * config/settings.ts); any other language's pool is kept warm from its first call on (that call waits for its
 * start-up, outside its limits). Measured on a two-core machine, a waiting QuickJS runner costs 0.25 s of CPU to start
 * and 90 MiB; a Pyodide one 3.3 s of CPU (4–5 s on a busy machine) and 190 MiB: in every process at start, they were
 * over a third of the platform's idle memory (docs/benchmarks.md, "Memory"). The tests' platforms warm JavaScript.
 */
const languages: Language[] = ['javascript', 'python'];

const Input = z.object({
  language: z.enum(['python', 'javascript']).describe('python (3.14, standard library only) or javascript (ES2023)'),
  code: z.string().min(1).max(100_000).describe('The program; the value of its last expression is returned as result'),
});

export interface CodeExecuteOptions {
  /** Use a network namespace when the machine allows one (default true; tests turn it off to try the other layers). */
  networkNamespace?: boolean;
  /** Test seam: every runner's start-up takes this much longer, as on a very busy machine. */
  startupDelayMs?: number;
}

export function createCodeExecuteTool(overrides: Partial<CodeLimits> = {}, options: CodeExecuteOptions = {}) {
  const limits = { ...DEFAULT_CODE_LIMITS, ...overrides };
  const pools = new Map<string, RunnerPool>();
  /** The runners for a language and sandbox settings (what a runner is started with). */
  const pool = (settings: ToolSettings, language: Language): RunnerPool => {
    const key = JSON.stringify([language, settings.sandboxRoot, settings.sandboxQuotaBytes]);
    let found = pools.get(key);
    if (!found) {
      found = new RunnerPool({
        language,
        limits,
        sandboxRoot: settings.sandboxRoot,
        quotaBytes: settings.sandboxQuotaBytes,
        networkNamespace: options.networkNamespace !== false,
        startupDelayMs: options.startupDelayMs,
      });
      pools.set(key, found);
    }
    return found;
  };
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
    // A backstop: the start-up bound, the code's wall-clock limit, and room to carry its files into the sandbox.
    timeoutMs: limits.startupMs + limits.wallMs + 10_000,
    retry: { maximumAttempts: 1, initialIntervalMs: 0 },
    maxOutputChars: limits.outputChars + limits.resultChars + 10_000,
    configured: () => true,
    warm: async (settings) => {
      const warmed = languages.filter((language) => settings.enginesWarmAtStart?.includes(language));
      await Promise.all(warmed.map((language) => pool(settings, language).warm()));
    },
    run: (input, context) => {
      const runners = pool(context.settings, input.language);
      // Kept warm from its first call on; this call takes the runner that starts now.
      void runners.warm().catch(() => undefined);
      return execute(input, context, limits, runners);
    },
  });
}

export const codeExecuteTool = createCodeExecuteTool();

async function execute(input: z.infer<typeof Input>, context: ToolContext, limits: CodeLimits, runners: RunnerPool) {
  const { sandboxQuotaBytes } = context.settings;
  const root = await openSandbox(context.settings, context.conversationId);
  const before = await walkSandbox(root);
  const used = before.reduce((sum, entry) => sum + entry.size, 0);
  const call: RunnerCall = {
    code: input.code,
    writeBudgetBytes: Math.max(0, sandboxQuotaBytes - used),
    entryBudget: Math.max(0, SANDBOX_MAX_ENTRIES - before.length),
  };
  const release = await runnerSlot(context.signal);
  let execution: Execution;
  try {
    const runner = runners.take();
    runner.hold();
    await engineReady(runner, context.signal);
    execution = await runner.run(call, root, context.signal);
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

/** Waits for the runner's engine to load (a warm one is ready already); a cancelled call ends the runner. */
async function engineReady(runner: Runner, signal: AbortSignal): Promise<void> {
  const cancelled = () => {
    runner.discard();
    return new ToolError('the call was cancelled');
  };
  if (signal.aborted) throw cancelled();
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([runner.ready, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
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
  // The runner's own account of how the code ended comes first: it was sent before any kill that followed it (a
  // JavaScript loop interrupted at its CPU limit, read by a busy parent only after the wall clock's timer had fired).
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
  if (killed) return killed;
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
