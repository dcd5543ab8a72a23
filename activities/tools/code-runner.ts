/**
 * The child process code_execute runs one piece of code in, then exits: Python in Pyodide (CPython compiled to
 * WebAssembly) or JavaScript in QuickJS (also WebAssembly). runner-pool.ts starts it under OS limits and the Node
 * permission model (read: the engines and this file; read and write: its own staging directory, where the calling
 * conversation's sandbox is linked in when a call comes; no child processes, workers or addons), usually ahead of
 * the call, and enforces CPU time and wall-clock time from outside. This file adds what only the inside can do:
 *
 * - memory: WebAssembly memories cannot grow past `memoryBytes` (Python gets MemoryError); QuickJS's own heap limit;
 * - network: fetch, WebSocket and friends removed, Node's socket prototypes made to throw (Python's socket module
 *   goes through them), on top of the network namespace the parent uses when it can;
 * - host: `process.kill`, `process.binding`, `getBuiltinModule` and the like replaced after the engine loaded,
 *   child_process stubbed (Pyodide's `os.system` calls it), eval and `new Function` disabled by the parent's flags,
 *   Python's `js` module an empty object: what Python reaches of the JavaScript side cannot run code or signal
 *   processes. The runner refuses to start outside the permission model;
 * - files: Python sees Pyodide's in-memory file system with the sandbox mounted at /sandbox (its working directory);
 *   the host's files are not there. Writes count against the sandbox's remaining quota (ENOSPC past it), symbolic
 *   links cannot be made. JavaScript gets `fs.readFile`, `fs.writeFile`, `fs.appendFile`, `fs.readdir` on the
 *   sandbox only;
 * - output: stdout and stderr stream to the parent as they come; past `outputChars` the code is stopped.
 *
 * Protocol: one JSON line on stdin sets the runner up (`RunnerSetup`); it loads its engine, mounts its directory as
 * /sandbox and says `ready`; the next line is the call (`RunnerCall`), run at once. Every message is one JSON line on
 * stdout (`RunnerMessage`). Stdin closing before a call (the parent went away) ends the runner.
 */
import childProcess from 'node:child_process';
import dgram from 'node:dgram';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeSync,
} from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { PyodideAPI } from 'pyodide';
import type { QuickJSContext, QuickJSRuntime } from 'quickjs-emscripten';
import { sandboxPathSegments } from './sandbox.ts';

/** What a runner is started with, before any call. */
export interface RunnerSetup {
  language: 'python' | 'javascript';
  /** The runner's staging directory (a real path): /sandbox for the code, the call's sandbox linked in. */
  sandboxDir: string;
  /** Bytes a WebAssembly memory may grow to. */
  memoryBytes: number;
  /** Characters of stdout and stderr together before the code is stopped. */
  outputChars: number;
  /** Characters of the JSON result at most. */
  resultChars: number;
  /** CPU time after which QuickJS interrupts the code (Python is stopped by the parent). */
  cpuMs: number;
  /** Test seam: the runner sleeps this long before loading its engine, a start-up as slow as on a busy machine. */
  startupDelayMs?: number;
}

/** The one call a ready runner runs. */
export interface RunnerCall {
  code: string;
  /** Bytes the code may add to the sandbox (its quota minus what it holds). */
  writeBudgetBytes: number;
  /** Files and directories the code may create. */
  entryBudget: number;
}

export type RunnerFailure = 'exception' | 'output_limit' | 'cpu_limit' | 'memory_limit';

export type RunnerMessage =
  | { type: 'ready' }
  | { type: 'stdout' | 'stderr'; text: string }
  | { type: 'done'; ok: true; result: unknown }
  | { type: 'done'; ok: false; failure: RunnerFailure; error: string };

/** Emscripten errno values (not Linux's): what Python's OSError reports. */
const errno = { EPERM: 63, ENOSPC: 51, EDQUOT: 19 } as const;
const quickJsStackBytes = 256 * 1024;

function send(message: RunnerMessage): void {
  writeSync(1, `${JSON.stringify(message)}\n`);
}

function finish(message: Extract<RunnerMessage, { type: 'done' }>): never {
  send(message);
  process.exit(0);
}

// ---- guards installed before any engine loads ----

function limitWasmMemory(maxBytes: number): void {
  interface WasmMemory {
    readonly buffer: ArrayBuffer;
    grow(pages: number): number;
  }
  const { prototype } = (globalThis as unknown as { WebAssembly: { Memory: { prototype: WasmMemory } } }).WebAssembly
    .Memory;
  const grow = prototype.grow;
  prototype.grow = function (this: WasmMemory, pages: number) {
    if (this.buffer.byteLength + pages * 65_536 > maxBytes) throw new RangeError('WebAssembly memory limit reached');
    return grow.call(this, pages);
  };
}

function blockNetwork(): void {
  const refuse = (): never => {
    throw new Error('network access is disabled in the sandbox');
  };
  net.Socket.prototype.connect = refuse;
  net.Server.prototype.listen = refuse;
  dgram.Socket.prototype.bind = refuse;
  dgram.Socket.prototype.send = refuse;
  dgram.Socket.prototype.connect = refuse;
  const global = globalThis as Record<string, unknown>;
  for (const name of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest', 'Request', 'navigator']) {
    delete global[name];
  }
}

/**
 * Pyodide implements `os.system` with `child_process.spawnSync` (the permission model refuses it, fatally for the
 * interpreter): it gets a polite failure instead, exit status 127 and a line on stderr.
 */
function blockProcesses(output: OutputSink): void {
  const message = 'starting processes is not allowed in the sandbox';
  const refuse = (): never => {
    throw new Error(message);
  };
  Object.assign(childProcess, {
    spawn: refuse,
    exec: refuse,
    execFile: refuse,
    fork: refuse,
    execSync: refuse,
    execFileSync: refuse,
    spawnSync: () => {
      output('stderr', `${message}\n`);
      return { pid: 0, output: [], stdout: null, stderr: null, status: 127, signal: null, error: new Error(message) };
    },
  });
  syncBuiltinESMExports();
}

/** Pyodide reads `process.binding('constants')` when it loads; the permission model forbids the real one. */
function shimProcessBinding(): void {
  const fsConstants = constants;
  Object.assign(process, {
    binding: (name: string) => {
      if (name === 'constants') return { fs: fsConstants };
      throw new Error(`process.binding('${name}') is not available in the sandbox`);
    },
  });
}

/** After the engine loaded: nothing the code can reach signals processes, loads modules or changes directory. */
function lockDownProcess(): void {
  const hostile = [
    'kill',
    '_kill',
    '_debugProcess',
    'binding',
    '_linkedBinding',
    'dlopen',
    'getBuiltinModule',
    'chdir',
    'umask',
    'setuid',
    'setgid',
    'seteuid',
    'setegid',
    'setgroups',
    'initgroups',
    'loadEnvFile',
    'setSourceMapsEnabled',
  ];
  const target = process as unknown as Record<string, unknown>;
  for (const name of hostile) {
    if (typeof target[name] !== 'function') continue;
    Object.defineProperty(target, name, {
      value: () => {
        throw new Error(`process.${name} is not available in the sandbox`);
      },
      writable: false,
      configurable: false,
    });
  }
  process.env = {};
  delete (globalThis as { require?: unknown }).require;
}

// ---- output ----

type OutputSink = (stream: 'stdout' | 'stderr', text: string) => void;

function outputSink(limit: number): OutputSink {
  let used = 0;
  return (stream: 'stdout' | 'stderr', text: string): void => {
    if (text === '') return;
    const room = limit - used;
    used += text.length;
    if (text.length <= room) {
      send({ type: stream, text });
      return;
    }
    if (room > 0) send({ type: stream, text: text.slice(0, room) });
    finish({
      type: 'done',
      ok: false,
      failure: 'output_limit',
      error: `the code printed more than ${limit} characters and was stopped`,
    });
  };
}

/** A JSON.parse reviver keeping integers past 2^53 exact, as strings (Python's ints have no limit). */
const exactIntegers = ((_key: string, value: unknown, context?: { source?: string }) =>
  typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
    ? context!.source
    : value) as (key: string, value: unknown) => unknown;

function capResult(value: unknown, limit: number): unknown {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length <= limit ? value : cut(text, limit);
}

function cut(text: string, limit: number): string {
  return `${text.slice(0, limit)}… (result cut: ${text.length - limit} more characters)`;
}

// ---- write budget shared by both languages ----

/** Empty until the call grants the sandbox's remaining room: nothing is written before the call. */
class WriteBudget {
  bytes = 0;
  entries = 0;

  grant(call: RunnerCall): void {
    this.bytes = call.writeBudgetBytes;
    this.entries = call.entryBudget;
  }

  /** Takes `grown` bytes; false when the quota has no room for them. */
  takeBytes(grown: number): boolean {
    if (grown <= 0) return true;
    if (grown > this.bytes) return false;
    this.bytes -= grown;
    return true;
  }

  takeEntry(): boolean {
    if (this.entries <= 0) return false;
    this.entries -= 1;
    return true;
  }
}

// ---- Python ----

interface EmscriptenStream {
  nfd: number;
  position: number;
}
interface EmscriptenNode {
  mode: number;
}
interface NodeFsOps {
  stream_ops: {
    write(stream: EmscriptenStream, buffer: Uint8Array, offset: number, length: number, position?: number): number;
    setattr(stream: EmscriptenStream, attr: { size?: number }): void;
  };
  node_ops: {
    mknod(parent: EmscriptenNode, name: string, mode: number, dev: number): EmscriptenNode;
    setattr(node: EmscriptenNode, attr: { size?: number }): void;
    symlink(parent: EmscriptenNode, name: string, target: string): void;
  };
  realPath(node: EmscriptenNode): string;
}

/** Code the engine runs, once it is loaded. */
type Run = (code: string) => Promise<never>;

async function preparePython(setup: RunnerSetup, output: OutputSink, budget: WriteBudget): Promise<Run> {
  const { loadPyodide } = await import('pyodide');
  const pyodide = await loadPyodide({
    jsglobals: Object.create(null) as object,
    stdout: (text) => output('stdout', `${text}\n`),
    stderr: (text) => output('stderr', `${text}\n`),
  });
  const FS = pyodide.FS;
  const nodefs = FS.filesystems.NODEFS as unknown as NodeFsOps;
  const refuse = (code: number): never => {
    throw new FS.ErrnoError(code);
  };
  const { stream_ops: streamOps, node_ops: nodeOps } = nodefs;
  const write = streamOps.write;
  streamOps.write = (stream, buffer, offset, length, position) => {
    const size = fstatSync(stream.nfd).size;
    if (!budget.takeBytes((position ?? size) + length - size)) refuse(errno.ENOSPC);
    return write(stream, buffer, offset, length, position);
  };
  const streamSetattr = streamOps.setattr;
  streamOps.setattr = (stream, attr) => {
    if (attr.size !== undefined && !budget.takeBytes(attr.size - fstatSync(stream.nfd).size)) refuse(errno.ENOSPC);
    streamSetattr(stream, attr);
  };
  const nodeSetattr = nodeOps.setattr;
  nodeOps.setattr = (node, attr) => {
    if (attr.size !== undefined && !budget.takeBytes(attr.size - lstatSync(nodefs.realPath(node)).size)) {
      refuse(errno.ENOSPC);
    }
    nodeSetattr(node, attr);
  };
  const mknod = nodeOps.mknod;
  nodeOps.mknod = (parent, name, mode, dev) => {
    if (!budget.takeEntry()) refuse(errno.EDQUOT);
    return mknod(parent, name, mode, dev);
  };
  nodeOps.symlink = () => refuse(errno.EPERM);
  FS.mkdir('/sandbox');
  FS.mount(FS.filesystems.NODEFS, { root: setup.sandboxDir }, '/sandbox');
  FS.chdir('/sandbox');
  const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  for (const stream of ['stdout', 'stderr'] as const) {
    const options = {
      isatty: true, // line buffered, so what was printed before a kill still reaches the parent
      write: (buffer: Uint8Array) => {
        output(stream, decoder[stream].decode(buffer, { stream: true }));
        return buffer.length;
      },
    };
    if (stream === 'stdout') pyodide.setStdout(options);
    else pyodide.setStderr(options);
  }
  pyodide.setStdin({ stdin: () => null });
  return (code) => runPython(pyodide, code, setup);
}

async function runPython(pyodide: PyodideAPI, code: string, setup: RunnerSetup): Promise<never> {
  let value: unknown;
  try {
    value = await pyodide.runPythonAsync(code, { filename: '<code>' });
  } catch (error) {
    const status = exitStatus(error);
    if (status === 0) finish({ type: 'done', ok: true, result: null });
    if (status !== null)
      finish({ type: 'done', ok: false, failure: 'exception', error: `the code exited with status ${status}` });
    const traceback = compactTrace(trimTraceback(error instanceof Error ? error.message : String(error)));
    const memory = /\bMemoryError\b/.test(traceback.split('\n').at(-1) ?? '');
    finish({ type: 'done', ok: false, failure: memory ? 'memory_limit' : 'exception', error: traceback });
  }
  let result: unknown = value;
  if (value instanceof pyodide.ffi.PyProxy) {
    // Through Python's json (a list, dict, …), else its repr; cut before it is parsed here.
    const json = pyodide.pyimport('json');
    const builtins = pyodide.pyimport('builtins');
    let text: string;
    try {
      text = String(json.dumps(value));
    } catch {
      text = JSON.stringify(String(builtins.repr(value)));
    }
    result = text.length > setup.resultChars ? cut(text, setup.resultChars) : JSON.parse(text, exactIntegers);
  } else if (typeof value === 'bigint' || (typeof value === 'number' && !Number.isFinite(value))) {
    result = String(value);
  }
  finish({ type: 'done', ok: true, result: capResult(result, setup.resultChars) });
}

/** The status of `sys.exit()`/`exit()` (SystemExit) or `os._exit()` (Emscripten's exit), or null for an error. */
function exitStatus(error: unknown): number | string | null {
  if (!(error instanceof Error)) return null;
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && /exit\(/.test(error.message)) return status;
  if ((error as { type?: unknown }).type !== 'SystemExit') return null;
  const argument = /SystemExit: ?(.*)\s*$/.exec(error.message)?.[1]?.trim() ?? '';
  if (argument === '' || argument === 'None' || argument === '0') return 0;
  return /^-?\d+$/.test(argument) ? Number(argument) : argument;
}

/** The traceback from the user's code on: Pyodide's own frames above it tell the model nothing. */
function trimTraceback(message: string): string {
  const lines = message.trimEnd().split('\n');
  const first = lines.findIndex((line) => line.startsWith('  File "<code>"'));
  if (lines[0]?.startsWith('Traceback') && first > 0) return [lines[0], ...lines.slice(first)].join('\n');
  return lines.join('\n');
}

// ---- JavaScript ----

async function prepareJavaScript(setup: RunnerSetup, output: OutputSink, budget: WriteBudget): Promise<Run> {
  const { newQuickJSWASMModule, RELEASE_SYNC } = await import('quickjs-emscripten');
  const quickjs = await newQuickJSWASMModule(RELEASE_SYNC);
  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(Math.floor(setup.memoryBytes * 0.75));
  runtime.setMaxStackSize(quickJsStackBytes);
  const vm = runtime.newContext();
  const files = sandboxFiles(setup, budget);

  const format = (handles: Parameters<Parameters<typeof vm.newFunction>[1]>): string =>
    handles
      .map((handle) => {
        if (vm.typeof(handle) === 'string') return vm.getString(handle);
        const value: unknown = vm.dump(handle);
        if (value && typeof value === 'object' && 'message' in value && 'name' in value) {
          return `${String(value.name)}: ${String(value.message)}`;
        }
        return typeof value === 'object' ? JSON.stringify(value) : String(value);
      })
      .join(' ');
  const consoleObject = vm.newObject();
  for (const [name, stream] of [
    ['log', 'stdout'],
    ['info', 'stdout'],
    ['debug', 'stdout'],
    ['warn', 'stderr'],
    ['error', 'stderr'],
  ] as const) {
    vm.newFunction(name, (...args) => output(stream, `${format(args)}\n`)).consume((fn) =>
      vm.setProp(consoleObject, name, fn),
    );
  }
  vm.setProp(vm.global, 'console', consoleObject);
  consoleObject.dispose();

  const fsObject = vm.newObject();
  const text = (handle: Parameters<typeof vm.dump>[0]): string | undefined => {
    const value: unknown = vm.dump(handle);
    if (value === undefined || typeof value === 'string') return value;
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  };
  const hostCall = (name: string, fn: (...args: (string | undefined)[]) => unknown) =>
    vm.newFunction(name, (...args) => {
      try {
        const value = fn(...args.map(text));
        if (value === undefined) return vm.undefined;
        if (typeof value === 'string') return vm.newString(value);
        const array = vm.newArray();
        (value as string[]).forEach((item, index) => vm.newString(item).consume((h) => vm.setProp(array, index, h)));
        return array;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return { error: vm.newError(message.replaceAll(setup.sandboxDir, '/sandbox')) };
      }
    });
  for (const [name, fn] of Object.entries(files)) {
    hostCall(name, fn).consume((handle) => vm.setProp(fsObject, name, handle));
  }
  vm.setProp(vm.global, 'fs', fsObject);
  fsObject.dispose();
  return (code) => runJavaScript(runtime, vm, code, setup);
}

async function runJavaScript(
  runtime: QuickJSRuntime,
  vm: QuickJSContext,
  code: string,
  setup: RunnerSetup,
): Promise<never> {
  // QuickJS asks every few thousand instructions; the answer is this process's CPU time, not the wall clock.
  const cpuAtStart = process.cpuUsage();
  runtime.setInterruptHandler(() => {
    const { user, system } = process.cpuUsage(cpuAtStart);
    return (user + system) / 1000 > setup.cpuMs;
  });
  let outcome: ReturnType<typeof vm.evalCode>;
  try {
    outcome = vm.evalCode(code, 'code.js');
    runtime.executePendingJobs();
  } catch (error) {
    // The host itself gave out (its stack, or the WebAssembly memory QuickJS lives in).
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const memory = /memory|OOM/i.test(message);
    finish({ type: 'done', ok: false, failure: memory ? 'memory_limit' : 'exception', error: message });
  }
  if (outcome.error) {
    const error = describeError(vm.dump(outcome.error));
    const failure: RunnerFailure =
      error.message === 'interrupted' ? 'cpu_limit' : error.message === 'out of memory' ? 'memory_limit' : 'exception';
    finish({ type: 'done', ok: false, failure, error: error.text });
  }
  let handle = outcome.value;
  const state = vm.getPromiseState(handle);
  if (state.type === 'rejected') {
    finish({
      type: 'done',
      ok: false,
      failure: 'exception',
      error: `Uncaught (in promise) ${describeError(vm.dump(state.error)).text}`,
    });
  }
  if (state.type === 'pending') finish({ type: 'done', ok: true, result: null });
  if (!state.notAPromise) handle = state.value;
  const result: unknown = vm.typeof(handle) === 'function' ? '[function]' : vm.dump(handle);
  finish({ type: 'done', ok: true, result: capResult(result, setup.resultChars) });
}

/** A QuickJS error (dumped: `{name, message, stack}`) or any thrown value, as text. */
function describeError(dumped: unknown): { message: string; text: string } {
  if (!dumped || typeof dumped !== 'object' || !('message' in dumped)) {
    const text = typeof dumped === 'string' ? dumped : (JSON.stringify(dumped) ?? String(dumped));
    return { message: text, text: `Uncaught ${text}` };
  }
  const { name = 'Error', message, stack = '' } = dumped as { name?: unknown; message: unknown; stack?: unknown };
  const trace = String(stack).trimEnd();
  return {
    message: String(message),
    text: compactTrace(`${String(name)}: ${String(message)}${trace ? `\n${trace}` : ''}`),
  };
}

/** Repeated lines (deep recursion) folded into one, and at most 40 lines. */
function compactTrace(text: string): string {
  const lines: string[] = [];
  let repeats = 0;
  for (const line of text.split('\n')) {
    if (line === lines.at(-1)) {
      repeats += 1;
      continue;
    }
    if (repeats > 0) lines.push(`    [previous line repeated ${repeats} more times]`);
    repeats = 0;
    lines.push(line);
  }
  if (repeats > 0) lines.push(`    [previous line repeated ${repeats} more times]`);
  if (lines.length <= 40) return lines.join('\n');
  return [...lines.slice(0, 20), `    … ${lines.length - 40} lines …`, ...lines.slice(-20)].join('\n');
}

/** The JavaScript `fs` API: paths relative to the sandbox (or under /sandbox), no links, the same write budget. */
function sandboxFiles(
  setup: RunnerSetup,
  budget: WriteBudget,
): Record<string, (...args: (string | undefined)[]) => unknown> {
  const resolve = (given: string, create: boolean): string => {
    const relative =
      given === '/sandbox' ? '' : given.startsWith('/sandbox/') ? given.slice('/sandbox/'.length) : given;
    let current = setup.sandboxDir;
    const segments = sandboxPathSegments(relative);
    for (const [index, segment] of segments.entries()) {
      current = path.join(current, segment);
      let stat;
      try {
        stat = lstatSync(current);
      } catch {
        if (create && index < segments.length - 1) {
          if (!budget.takeEntry()) throw new Error('the sandbox holds no more files');
          mkdirSync(current, { mode: 0o700 });
        }
        continue;
      }
      if (stat.isSymbolicLink()) throw new Error(`${given}: symbolic links are not followed`);
    }
    return current;
  };
  const write = (given: string, text: string, append: boolean) => {
    const target = resolve(given, true);
    const data = Buffer.from(String(text), 'utf8');
    let size = 0;
    let exists = true;
    try {
      size = lstatSync(target).size;
    } catch {
      exists = false;
    }
    if (!exists && !budget.takeEntry()) throw new Error('the sandbox holds no more files');
    if (!budget.takeBytes(append ? data.length : data.length - size)) throw new Error('the sandbox quota is full');
    const flags =
      constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (append ? constants.O_APPEND : constants.O_TRUNC);
    const fd = openSync(target, flags, 0o600);
    try {
      writeSync(fd, data);
    } finally {
      closeSync(fd);
    }
  };
  return {
    readFile: (given = '') => {
      const fd = openSync(resolve(given, false), constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        if (fstatSync(fd).size > setup.memoryBytes / 4) throw new Error(`${given} is too large to read at once`);
        return readFileSync(fd, 'utf8');
      } finally {
        closeSync(fd);
      }
    },
    writeFile: (given = '', text = '') => write(given, text, false),
    appendFile: (given = '', text = '') => write(given, text, true),
    readdir: (given = '.') => readdirSync(resolve(given, false)).sort(),
  };
}

// ---- main ----

if (!(process as { permission?: unknown }).permission) {
  // Without the permission model the engine could reach the host's files and processes: never run code so.
  process.stderr.write("code-runner.ts runs only under Node's permission model (--permission)\n");
  process.exit(2);
}
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
/**
 * The next line from the parent; none: the parent went away (it exited while this runner waited for a call), and so
 * does the runner, removing its staging directory, empty without a call (rmdir removes nothing else).
 */
async function receive<T>(ownDirectory?: string): Promise<T> {
  const line = await lines.next();
  if (line.done) {
    try {
      if (ownDirectory) rmdirSync(ownDirectory);
    } catch {
      // not empty or gone: the parent's to clean up
    }
    process.exit(0);
  }
  return JSON.parse(line.value) as T;
}

const setup = await receive<RunnerSetup>();
const output = outputSink(setup.outputChars);
limitWasmMemory(setup.memoryBytes);
blockNetwork();
blockProcesses(output);
shimProcessBinding();
process.on('uncaughtException', (error) => {
  finish({ type: 'done', ok: false, failure: 'exception', error: `${error.name}: ${error.message}` });
});
if (setup.startupDelayMs) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, setup.startupDelayMs);
const budget = new WriteBudget();
const run = await (setup.language === 'python' ? preparePython : prepareJavaScript)(setup, output, budget);
lockDownProcess();
send({ type: 'ready' });
const call = await receive<RunnerCall>(setup.sandboxDir);
budget.grant(call);
await run(call.code);
