/**
 * `code_execute` through `runTool`, as the chat turn calls it: Python and JavaScript results, files shared with the
 * file tools (and what code does to them carried into the sandbox), and hostile code: the host's files, other
 * conversations' files, the network (with and without the network namespace), endless and 10-minute loops, floods of
 * output, memory bombs, processes, the quota, cancellation. Every one must end in a clear tool error, and the test
 * process must stay responsive throughout. Runners start ahead of calls, and a slow start-up is waited for without
 * counting against the code's limits. Nothing here assumes how fast the machine is: limits are asserted through
 * the errors that name them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { codeExecuteTool, createCodeExecuteTool } from '../../../activities/tools/code-execute.ts';
import { fileReadTool } from '../../../activities/tools/file-read.ts';
import { fileWriteTool } from '../../../activities/tools/file-write.ts';
import { runTool, type ToolOutcome } from '../../../activities/tools/runtime.ts';
import { openSandbox, sandboxDirectory, sandboxUsage } from '../../../activities/tools/sandbox.ts';
import type { ToolDefinition } from '../../../activities/tools/tool.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';

/** Short limits, so the limit tests are quick; the 10-minute loops run with the real ones. */
const quickTool = createCodeExecuteTool({ cpuMs: 2_000, wallMs: 8_000, memoryBytes: 128 * 1024 * 1024 });
/** As where the kernel allows no network namespace (a default Docker profile): the in-process blocks alone. */
const noNamespaceTool = createCodeExecuteTool({}, { networkNamespace: false });
/** Runners that take a minute to start, as on a hopelessly busy machine. */
const slowTool = createCodeExecuteTool({}, { startupDelayMs: 60_000 });

let root: string;
let server: Server;
let connections = 0;
let port: number;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'tessera-code-'));
  server = createServer((socket) => {
    connections += 1;
    socket.end('HTTP/1.0 200 OK\r\n\r\nreached');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

let conversations = 0;
function context(quota = 1024 * 1024) {
  const settings = testToolSettings({ sandboxRoot: root, sandboxQuotaBytes: quota });
  return { conversationId: `code-${++conversations}`, settings };
}

type Context = ReturnType<typeof context>;

interface ExecuteOptions {
  tool?: ToolDefinition;
  context?: Context;
  signal?: AbortSignal;
}

function execute(language: 'python' | 'javascript', code: string, options: ExecuteOptions = {}): Promise<ToolOutcome> {
  const { tool = codeExecuteTool, signal } = options;
  return runTool(tool, JSON.stringify({ language, code }), options.context ?? context(), signal);
}

interface Output {
  stdout: string;
  stderr: string;
  result: unknown;
  files_written: string[];
}

async function succeeds(
  language: 'python' | 'javascript',
  code: string,
  options: ExecuteOptions = {},
): Promise<Output> {
  const outcome = await execute(language, code, options);
  if (!outcome.ok) throw new Error(outcome.content);
  return JSON.parse(outcome.content) as Output;
}

async function fails(
  language: 'python' | 'javascript',
  code: string,
  pattern: RegExp,
  options: ExecuteOptions = {},
): Promise<string> {
  const outcome = await execute(language, code, options);
  expect(outcome.ok).toBe(false);
  expect(outcome.content).toMatch(pattern);
  return outcome.content;
}

/**
 * The error of code that never ends, stopped by the first of its limits (docs/session-chat-and-tools.md): its CPU
 * time, or on a machine too busy to give it that much CPU in time, the wall clock. A wall-clock stop says how much CPU
 * time the code had, and that must be under the CPU limit (code past it is reported as stopped by it): which limit
 * came first is the machine's doing, the naming of the right one is the platform's promise.
 */
function expectStoppedAtALimit(content: string, limits: { cpuS: number; wallS: number }): 'cpu' | 'wall' {
  if (content.includes(`the code used more than ${limits.cpuS} s of CPU time and was stopped`)) return 'cpu';
  const wall = new RegExp(
    `the code did not finish within ${limits.wallS} s and was stopped \\(it had used (\\d+\\.\\d) s of CPU time\\)`,
  ).exec(content);
  expect(wall ? 'stopped at a limit' : content).toBe('stopped at a limit');
  expect(Number(wall![1])).toBeLessThanOrEqual(limits.cpuS);
  return 'wall';
}

/** Runs `work` while timing this process's event loop: the longest gap between 20 ms ticks. */
async function withLoopWatch<T>(work: () => Promise<T>): Promise<{ value: T; maxGapMs: number; elapsedMs: number }> {
  const started = performance.now();
  let last = started;
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 20);
  try {
    const value = await work();
    return { value, maxGapMs, elapsedMs: performance.now() - started };
  } finally {
    clearInterval(timer);
  }
}

describe('code_execute', () => {
  it('runs Python: stdout, stderr and the value of the last expression', async () => {
    const [output, unusual] = await Promise.all([
      succeeds(
        'python',
        'import sys\nprint("hello from", sys.version_info[:2])\nprint("careful", file=sys.stderr)\n' +
          '{"sum": sum(range(10)), "items": [1, "two", None], "big": [2**70]}',
      ),
      succeeds('python', '{1, 2} | {3}'),
    ]);
    expect(output).toEqual({
      stdout: 'hello from (3, 14)\n',
      stderr: 'careful\n',
      result: { sum: 45, items: [1, 'two', null], big: ['1180591620717411303424'] }, // big integers stay exact
      files_written: [],
    });
    expect(unusual.result).toBe('{1, 2, 3}'); // what JSON cannot carry comes back as its repr
  });

  it('runs JavaScript: console output and the completion value, promises settled', async () => {
    expect(
      await succeeds(
        'javascript',
        'console.log("hi", {a: 1}, [2]); console.error("oops"); const x = 6; ({ x: x * 7 })',
      ),
    ).toEqual({ stdout: 'hi {"a":1} [2]\n', stderr: 'oops\n', result: { x: 42 }, files_written: [] });
    expect((await succeeds('javascript', '(async () => { await null; return "later" })()')).result).toBe('later');
  });

  it("returns the code's own errors as a tool error with the traceback and what was printed", async () => {
    const python = await fails('python', 'print("before")\n1 / 0', /the python code raised an error/);
    expect(python).toMatch(/File "<code>", line 2[\s\S]*ZeroDivisionError: division by zero\n--- stdout ---\nbefore/);
    expect(python).not.toMatch(/_pyodide|eval_code/);
    await fails(
      'javascript',
      'null.x',
      /the javascript code raised an error:\nTypeError: cannot read property 'x' of null/,
    );
    await fails('javascript', 'Promise.reject(new Error("boom"))', /Uncaught \(in promise\) Error: boom/);
  });

  it('shares the sandbox with the file tools: files written by code are listed and readable', async () => {
    const shared = context();
    await runTool(fileWriteTool, JSON.stringify({ path: 'input.txt', content: '3\n4\n' }), shared);
    const python = await succeeds(
      'python',
      'import os\nnumbers = [int(line) for line in open("input.txt")]\nos.makedirs("out", exist_ok=True)\n' +
        'with open("/sandbox/out/squares.csv", "w") as f:\n    f.write("\\n".join(str(n * n) for n in numbers))\n' +
        'os.getcwd()',
      { context: shared },
    );
    expect(python).toMatchObject({ result: '/sandbox', files_written: ['out/squares.csv'] });
    const javascript = await succeeds(
      'javascript',
      'fs.writeFile("notes/js.txt", fs.readFile("out/squares.csv") + "\\n25"); fs.readdir("/sandbox")',
      { context: shared },
    );
    expect(javascript).toMatchObject({ result: ['input.txt', 'notes', 'out'], files_written: ['notes/js.txt'] });
    const read = await runTool(fileReadTool, JSON.stringify({ path: 'notes/js.txt' }), shared);
    expect(JSON.parse(read.content)).toMatchObject({ content: '9\n16\n25' });
  });

  it("cannot read the host's files, from Python or from JavaScript", async () => {
    const python = await succeeds(
      'python',
      `
import os
attempts = {}
def attempt(name, action):
    try:
        attempts[name] = "SUCCEEDED: " + repr(action())[:80]
    except BaseException as error:
        attempts[name] = type(error).__name__
attempt("open", lambda: open("/etc/passwd").read())
attempt("relative", lambda: open("../../../../../../etc/passwd").read())
attempt("proc", lambda: open("/proc/self/environ").read())
attempt("listdir", lambda: os.listdir("/etc"))
import pyodide_js
from pyodide.ffi import to_js
def mount_host():
    pyodide_js.FS.mkdir("/host")
    options = to_js({"root": "/etc"}, dict_converter=pyodide_js.constructor.fromEntries)
    pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS, options, "/host")
    return open("/host/passwd").read()
attempt("mount", mount_host)
async def load():
    return await pyodide_js._api.loadBinaryFile("/etc/passwd")
import asyncio
try:
    attempts["load"] = "SUCCEEDED: " + repr(await load())[:80]
except BaseException as error:
    attempts["load"] = type(error).__name__
attempt("eval", lambda: pyodide_js.constructor.constructor("return process.getBuiltinModule('fs').readFileSync('/etc/passwd', 'utf8')")())
attempts["root"] = sorted(os.listdir("/"))
attempts
`,
    );
    const attempts = python.result as Record<string, unknown>;
    expect(attempts).toMatchObject({
      open: 'FileNotFoundError',
      relative: 'FileNotFoundError',
      proc: 'FileNotFoundError',
      listdir: 'FileNotFoundError',
      mount: 'JsException', // the permission model refuses the host's /etc
      load: 'JsException', // Node: "Access to this API has been restricted"
      eval: 'JsException', // code generation from strings is disabled
    });
    // Pyodide's own in-memory file system, with the sandbox mounted: no host directory in sight.
    expect(attempts.root).toEqual(['dev', 'home', 'host', 'lib', 'proc', 'sandbox', 'tmp']);

    await fails('javascript', 'fs.readFile("/etc/passwd")', /absolute path/);
    await fails('javascript', 'fs.readFile("../../../../etc/passwd")', /leaves the sandbox/);
    expect((await succeeds('javascript', '[typeof require, typeof process, typeof globalThis.os]')).result).toEqual([
      'undefined',
      'undefined',
      'undefined',
    ]);
  });

  const networkAttempts = () => `
import socket, urllib.request, js
from pyodide.http import pyfetch
import pyodide_js
attempts = {}
def attempt(name, action):
    try:
        attempts[name] = "SUCCEEDED: " + repr(action())[:80]
    except BaseException as error:
        attempts[name] = type(error).__name__
attempt("js.fetch", lambda: js.fetch("http://127.0.0.1:${port}/"))
try:
    response = await pyfetch("http://127.0.0.1:${port}/")
    attempts["pyfetch"] = "SUCCEEDED: " + await response.text()
except BaseException as error:
    attempts["pyfetch"] = type(error).__name__
attempt("socket", lambda: socket.create_connection(("127.0.0.1", ${port}), timeout=2).recv(10))
attempt("urllib", lambda: urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=2).read())
def node_sockets():
    pyodide_js._api.initializeNodeSockFS()
    return socket.create_connection(("127.0.0.1", ${port}), timeout=2).recv(10)
attempt("node sockets", node_sockets)
attempts
`;

  it.each([
    ['in the network namespace', codeExecuteTool],
    ['without it, in-process blocks alone', noNamespaceTool],
  ])('gives Python no network (%s)', async (_, tool) => {
    const before = connections;
    const { result } = await succeeds('python', networkAttempts(), { tool });
    for (const outcome of Object.values(result as Record<string, string>)) expect(outcome).not.toMatch(/SUCCEEDED/);
    expect(result).toMatchObject({ 'js.fetch': 'AttributeError', pyfetch: 'NameError', socket: 'OSError' });
    expect(connections).toBe(before);
  });

  it('gives JavaScript no network', async () => {
    expect(
      (await succeeds('javascript', '[typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof navigator]'))
        .result,
    ).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
  });

  it('stops an endless loop at the CPU limit while this process stays responsive', async () => {
    // The CPU limit (2 s) stops it, or on a machine so busy that the loop gets less than a quarter of a core, the
    // wall-clock limit (8 s) first: a clear error naming the limit reached, with the output so far.
    const limits = { cpuS: 2, wallS: 8 };
    const limit = /used more than 2 s of CPU time|did not finish within 8 s/;
    const python = await withLoopWatch(() =>
      fails('python', 'print("spinning")\nwhile True: pass', limit, { tool: quickTool }),
    );
    expectStoppedAtALimit(python.value, limits);
    expect(python.value).toMatch(
      /^code_execute: the code (used more than 2 s of CPU time|did not finish within 8 s) and was stopped.*\n--- stdout ---\nspinning/,
    );
    expect(python.maxGapMs).toBeLessThan(1_000);

    const javascript = await withLoopWatch(() => fails('javascript', 'for (;;) {}', limit, { tool: quickTool }));
    expectStoppedAtALimit(javascript.value, limits);
    expect(javascript.maxGapMs).toBeLessThan(1_000);
  });

  it('stops a program that sleeps at the wall clock, saying how little CPU time it had', async () => {
    const error = await fails(
      'python',
      'import time\nprint("sleeping")\ntime.sleep(600)',
      /did not finish within 8 s/,
      {
        tool: quickTool,
      },
    );
    expect(expectStoppedAtALimit(error, { cpuS: 2, wallS: 8 })).toBe('wall');
  });

  it('stops 10-minute loops at the real 10 s limit', async () => {
    // On a busy machine the 15 s wall clock may come first: a clear error naming the limit reached, in seconds, not
    // minutes.
    const limit = /used more than 10 s of CPU time|did not finish within 15 s/;
    const { value, maxGapMs } = await withLoopWatch(() =>
      Promise.all([
        fails('python', 'import time\nend = time.time() + 600\nwhile time.time() < end: pass', limit),
        fails('javascript', 'const end = Date.now() + 600000; while (Date.now() < end) {}', limit),
      ]),
    );
    expect(value).toHaveLength(2);
    for (const content of value) expectStoppedAtALimit(content, { cpuS: 10, wallS: 15 });
    expect(maxGapMs).toBeLessThan(1_000);
  });

  it('stops a flood of output at the cap and says so', async () => {
    const [lines] = await Promise.all([
      fails('python', 'while True: print("spam " * 100)', /printed more than 50000 characters/),
      fails('python', 'print("x" * 10_000_000)', /printed more than 50000 characters/),
      fails('javascript', 'for (;;) console.log("spam")', /printed more than 50000 characters/),
    ]);
    expect(lines.length).toBeLessThan(12_000); // the error quotes the end of the output, not all of it
  });

  it('stops memory bombs with a memory error', async () => {
    await Promise.all([
      fails(
        'python',
        'hoard = []\nwhile True: hoard.append(bytearray(10**7))',
        /ran out of memory \(limit 128 MiB\)[\s\S]*MemoryError/,
        {
          tool: quickTool,
        },
      ),
      fails('python', 'small = []\nwhile True: small.append(list(range(10**5)))', /ran out of memory/, {
        tool: quickTool,
      }),
      fails(
        'javascript',
        'const hoard = []; for (;;) hoard.push("x".repeat(1e6) + hoard.length)',
        /ran out of memory/,
        {
          tool: quickTool,
        },
      ),
    ]);
  });

  it('refuses to start processes (fork bombs) and survives runaway recursion', async () => {
    const [processes, python, javascript] = await Promise.all([
      succeeds(
        'python',
        `
import os, subprocess, multiprocessing
attempts = {}
def attempt(name, action):
    try:
        attempts[name] = "SUCCEEDED: " + repr(action())
    except BaseException as error:
        attempts[name] = type(error).__name__
attempt("fork", os.fork)
attempt("subprocess", lambda: subprocess.run(["sh", "-c", ":(){ :|:& };:"]))
attempt("spawn", lambda: multiprocessing.Process(target=print).start())
attempts["system"] = os.system("id") >> 8
attempts
`,
      ),
      fails('python', 'def bomb(n): return bomb(n + 1) + bomb(n + 1)\nbomb(0)', /RecursionError/),
      fails('javascript', 'function bomb() { return bomb() + bomb() } bomb()', /stack overflow/),
    ]);
    // os.system goes through Node's child_process, which the runner stubs (and the permission model forbids).
    expect(processes).toMatchObject({
      result: { fork: 'OSError', subprocess: 'OSError', spawn: 'ModuleNotFoundError', system: 127 },
      stderr: 'starting processes is not allowed in the sandbox\n',
    });
    expect(python).toMatch(/\[Previous line repeated \d+ more times\]/);
    expect(javascript).toMatch(/\[previous line repeated \d+ more times\]/);
    expect(javascript.length).toBeLessThan(5_000);
  });

  it("keeps code within the sandbox's quota", async () => {
    const small = context(64 * 1024);
    await fails(
      'python',
      'with open("big.bin", "wb") as f:\n    for _ in range(100): f.write(b"x" * 10_000)',
      /No space left on device[\s\S]*files written ---\nbig.bin/,
      { context: small },
    );
    await fails('javascript', 'fs.writeFile("big.txt", "x".repeat(100000))', /quota is full/, { context: small });
    const usage = await sandboxUsage(await openSandbox(small.settings, small.conversationId));
    expect(usage.bytes).toBeLessThanOrEqual(64 * 1024);
  });

  it('stops the code when the call is cancelled, running or still starting', async () => {
    const running = new AbortController();
    setTimeout(() => running.abort(new Error('turn cancelled')), 1_000);
    // An endless loop with 10 s of CPU allowed: only the cancellation can end it with this error.
    await fails('javascript', 'for (;;) {}', /the call was cancelled/, { signal: running.signal });
    const starting = new AbortController();
    setTimeout(() => starting.abort(new Error('turn cancelled')), 1_000);
    await fails('python', '6 * 7', /the call was cancelled/, { tool: slowTool, signal: starting.signal });
  });

  it('carries what the code did into the sandbox: files edited in place, new, renamed and deleted', async () => {
    const shared = context();
    for (const [file, content] of [
      ['kept.txt', 'one\n'],
      ['old-name.txt', 'moved\n'],
      ['gone.txt', 'x'],
      ['old-dir/inner.txt', 'y'],
      ['replaced.txt', 'before'],
    ]) {
      await runTool(fileWriteTool, JSON.stringify({ path: file, content }), shared);
    }
    const python = await succeeds(
      'python',
      `
import os, shutil
with open("kept.txt", "a") as f: f.write("two\\n")
os.rename("old-name.txt", "new-name.txt")
os.remove("gone.txt")
shutil.rmtree("old-dir")
os.makedirs("new-dir/deeper")
with open("new-dir/deeper/made.txt", "w") as f: f.write("made")
with open("replaced.tmp", "w") as f: f.write("after")
os.replace("replaced.tmp", "replaced.txt")
sorted(os.listdir("."))
`,
      { context: shared },
    );
    expect(python.result).toEqual(['kept.txt', 'new-dir', 'new-name.txt', 'replaced.txt']);
    const sandbox = sandboxDirectory(shared.settings, shared.conversationId);
    expect((await readdir(sandbox)).sort()).toEqual(['kept.txt', 'new-dir', 'new-name.txt', 'replaced.txt']);
    expect(await readFile(path.join(sandbox, 'kept.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(await readFile(path.join(sandbox, 'new-name.txt'), 'utf8')).toBe('moved\n');
    expect(await readFile(path.join(sandbox, 'new-dir/deeper/made.txt'), 'utf8')).toBe('made');
    expect(await readFile(path.join(sandbox, 'replaced.txt'), 'utf8')).toBe('after');
    expect(python.files_written.sort()).toEqual([
      'kept.txt',
      'new-dir/deeper/made.txt',
      'new-name.txt',
      'replaced.txt',
    ]);
    // The same from JavaScript, and no staging directory is left behind.
    await succeeds('javascript', 'fs.appendFile("kept.txt", "three\\n")', { context: shared });
    expect(await readFile(path.join(sandbox, 'kept.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
  });

  it("cannot reach other conversations' sandboxes or runners", async () => {
    const other = context();
    await runTool(fileWriteTool, JSON.stringify({ path: 'secret.txt', content: 'other conversation' }), other);
    const sandboxes = await realpath(root);
    const { result } = await succeeds(
      'python',
      `
import pyodide_js, os
from pyodide.ffi import to_js
attempts = {}
for name, host in [("sandboxes", ${JSON.stringify(sandboxes)}), ("runners", ${JSON.stringify(path.join(sandboxes, '.runners'))})]:
    try:
        pyodide_js.FS.mkdir("/" + name)
        options = to_js({"root": host}, dict_converter=pyodide_js.constructor.fromEntries)
        pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS, options, "/" + name)
        attempts[name] = "SUCCEEDED: " + repr(os.listdir("/" + name))
    except BaseException as error:
        attempts[name] = type(error).__name__
attempts["parent"] = sorted(os.listdir("/sandbox/.."))
attempts
`,
    );
    // The permission model refuses both: the runner may touch its own staging directory only.
    expect(result).toMatchObject({ sandboxes: 'JsException', runners: 'JsException' });
    expect(JSON.stringify(result)).not.toContain('secret');
  });

  it('waits for a start-up slower than any limit, which the limits do not count', async () => {
    // Slower than the 20 s the start-up was once allowed (as on a machine with a load of 7 on two cores), and than
    // the 15 s of wall clock the code may take.
    const slow = createCodeExecuteTool({ cpuMs: 2_000 }, { startupDelayMs: 22_000 });
    const [python, runaway] = await Promise.all([
      succeeds('python', '6 * 7', { tool: slow }),
      fails('javascript', 'console.log("running"); for (;;) {}', /and was stopped/, { tool: slow }),
    ]);
    expect(python.result).toBe(42);
    // Stopped by a limit of the code's own (the CPU's, or on a starved machine the wall clock's), after it ran: had
    // the 15 s of wall clock counted the 22 s start-up, the code would have been stopped before it printed.
    expectStoppedAtALimit(runaway, { cpuS: 2, wallS: 15 });
    expect(runaway).toContain('--- stdout ---\nrunning');
  }, 120_000);

  it('starts runners ahead of calls: a call takes a ready one, and the next one starts', async () => {
    // Runners that take 8 s to start: a call that finds one ready does not wait for that.
    const startupDelayMs = 8_000;
    const warmTool = createCodeExecuteTool({ cpuMs: 2_000 }, { startupDelayMs });
    const settings = { ...context().settings, enginesWarmAtStart: ['javascript' as const] };
    await warmTool.warm!(settings);
    const started = performance.now();
    expect((await succeeds('javascript', '6 * 7', { tool: warmTool })).result).toBe(42);
    expect(performance.now() - started).toBeLessThan(startupDelayMs);
    // The next call takes the runner started when the first was taken: its limits still count from its code.
    const runaway = await fails('javascript', 'console.log("running"); for (;;) {}', /and was stopped/, {
      tool: warmTool,
    });
    expectStoppedAtALimit(runaway, { cpuS: 2, wallS: 15 });
    expect(runaway).toContain('--- stdout ---\nrunning');
  }, 120_000);
});
