/**
 * `npm run cluster` (scripts/cluster.ts): the production shape on one machine, two API processes and two workers on a
 * Temporal server that persists to PostgreSQL, one PostgreSQL (a database of this run's own on the test's server,
 * dropped after, with the Temporal server's two). Every piece of work is started through one API process and read
 * back, resumed or followed through the other: a completion and its trace, a streamed completion cut after its first
 * tokens and resumed from the stream journal, a session chat turn continued and read back, a media job polled to its
 * end and its file served. An API process and a worker SIGKILLed are started again by the cluster while the other
 * API process serves. Then SIGTERM stops every process of it.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropDatabase, withDatabaseName } from '../../db/databases.ts';
import { freePortRange, isRunning, processTree, startChild, type Child } from '../../scripts/lib/processes.ts';
import { simulatedMediaProviders, simulatedProviders } from '../../scripts/lib/simulated-providers.ts';
import { ensureTemporalPostgresBinaries } from '../../scripts/lib/temporal-postgres.ts';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import { callDirective } from '../helpers/agents.ts';
import { readSse } from '../helpers/sse.ts';
import { waitFor } from '../helpers/wait.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const log = (line: string) => process.stderr.write(`[cluster] ${line}\n`);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let simulator: RunningSimulator;
let cluster: Child | undefined;
let dataDir: string;
let adminUrl: string;
let databaseName: string;
let masterKey: string;
let key: string;
/** API n's gateway at index n-1. */
let apis: string[];
let agentServices: string[];
let passed = false;
let failures = 0;

// The Temporal server and its schema tool come from the tool cache; on a machine that has never built them, the
// build (`go install`, once) takes many minutes on two cores, and is not what the cluster's start is timed by.
beforeAll(() => ensureTemporalPostgresBinaries(log), 45 * 60_000);

beforeAll(async () => {
  simulator = await startSimulator();
  await mkdir(`${root}.data`, { recursive: true });
  dataDir = await mkdtemp(`${root}.data/cluster-`);
  const apiBase = await freePortRange(4);
  const temporalPort = await freePortRange(9, [apiBase, apiBase + 1, apiBase + 2, apiBase + 3]);
  apis = [0, 1].map((index) => `http://127.0.0.1:${apiBase + 2 * index}`);
  agentServices = [0, 1].map((index) => `http://127.0.0.1:${apiBase + 2 * index + 1}`);
  // The server this run's tests use (DATABASE_URL, else the embedded one); the cluster creates its database there.
  adminUrl = process.env.TESSERA_TEST_DATABASE_URL ?? process.env.DATABASE_URL!;
  databaseName = `tessera_cluster_${process.pid}_${randomBytes(3).toString('hex')}`;
  masterKey = `te_${randomBytes(24).toString('base64url')}`;
  const passThrough = Object.fromEntries(
    [
      // Where the Temporal server's binaries are cached and built, and Go's module cache (its schema files).
      'XDG_CACHE_HOME',
      'TEMPORAL_SERVER_PATH',
      'TEMPORAL_SQL_TOOL_PATH',
      'GOPATH',
      'GOMODCACHE',
      'GOPROXY',
      'GOFLAGS',
      // The workflow bundle this test run built once (test/helpers/global-setup.ts).
      'WORKFLOW_BUNDLE_PATH',
    ].flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
  );
  cluster = startChild({
    name: 'npm run cluster',
    command: 'npm',
    args: [
      'run',
      'cluster',
      '--',
      ...['--apis', '2', '--workers', '2', '--port', String(apiBase), '--temporal-port', String(temporalPort)],
      ...['--data-dir', dataDir, '--database-url', withDatabaseName(adminUrl, databaseName)],
    ],
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...passThrough,
      HOST: '127.0.0.1',
      MASTER_KEY: masterKey,
      // Every provider, chat and media alike, played by this test's simulator (so the cluster starts none).
      ...simulatedProviders(simulator.url),
      ...simulatedMediaProviders(simulator.url, {}),
      MEDIA_POLL_INTERVAL_MS: '200',
      SHUTDOWN_GRACE_MS: '5000',
    },
  });
  const began = Date.now();
  let exited = false;
  void cluster.exited.then(() => (exited = true));
  await waitFor(
    'the cluster to print its banner',
    async () => {
      if (exited) throw new Error(`npm run cluster exited before it ran:\n${cluster!.output(80)}`);
      return cluster!.output(400).includes('is running in the production shape');
    },
    420_000,
  );
  log(`running ${((Date.now() - began) / 1000).toFixed(1)} s after npm run cluster`);

  const created = await fetch(`${apis[0]}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${masterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `cluster-${randomBytes(4).toString('hex')}@example.com`, plan: 'business' }),
  });
  expect(created.status).toBe(201);
  key = ((await created.json()) as { key: string }).key;
}, 480_000);

afterAll(async () => {
  if (!passed && cluster) {
    log(`npm run cluster output (last lines):\n${cluster.output(120)}`);
    for (const file of ['api-1.log', 'api-2.log', 'worker-1.log', 'worker-2.log', 'temporal.log']) {
      const text = await readFile(join(dataDir, 'logs', file), 'utf8').catch(() => '(none)');
      log(`${file} (last lines):\n${text.trimEnd().split('\n').slice(-15).join('\n')}`);
    }
  }
  await cluster?.stop(90_000);
  await simulator?.close();
  if (adminUrl && databaseName) {
    const admin = withDatabaseName(adminUrl, 'postgres');
    for (const name of [databaseName, `${databaseName}_temporal`, `${databaseName}_temporal_visibility`]) {
      await dropDatabase(admin, name).catch((error: unknown) => log(`could not drop ${name}: ${String(error)}`));
    }
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
}, 180_000);

/** A call to API `index` (0 or 1) with this test's key. */
function call(index: number, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${apis[index]}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
    signal: init.signal ?? AbortSignal.timeout(120_000),
  });
}

async function json(response: Response, status = 200): Promise<Json> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`);
  return JSON.parse(text) as Json;
}

async function complete(index: number, model: string, content: string): Promise<Json> {
  return json(
    await call(index, '/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    }),
  );
}

/** Counts a failed test, so the logs are printed at the end. */
function tracked(test: () => Promise<void>): () => Promise<void> {
  return async () => {
    failures++;
    await test();
    failures--;
  };
}

it(
  'lists each API process in its banner, serves both services on each, and logs each process under the data directory',
  tracked(async () => {
    const output = cluster!.output(400);
    for (const [index, gateway] of apis.entries()) {
      expect(output).toContain(`API ${index + 1}`);
      expect(output).toContain(`gateway ${gateway} (OpenAI SDK base URL: ${gateway}/v1)`);
      expect(output).toContain(`agent service ${agentServices[index]}`);
    }
    for (const url of [...apis, ...agentServices]) {
      await waitFor(`${url}/health to say ready`, async () => (await fetch(`${url}/health`)).status === 200, 60_000);
    }
    for (const file of ['api-1.log', 'api-2.log', 'worker-1.log', 'worker-2.log', 'temporal.log']) {
      expect(existsSync(join(dataDir, 'logs', file))).toBe(true);
    }
    // Each API process logs the requests it served, in its own file.
    await waitFor(
      'each API process to log its own requests',
      async () => {
        const logs = await Promise.all(
          ['api-1.log', 'api-2.log'].map((file) => readFile(join(dataDir, 'logs', file), 'utf8')),
        );
        return logs.every((text) => text.includes('"path":"/health"'));
      },
      30_000,
    );
  }),
  120_000,
);

it(
  'answers a completion through each API process and shows its trace through the other',
  tracked(async () => {
    for (const [through, readBack] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const completion = await complete(through, 'gpt-4o-mini', `Cluster completion through API ${through + 1}`);
      expect(completion.choices[0].message.content).toContain(`Cluster completion through API ${through + 1}`);
      // The answer leaves as soon as the provider call returns; the workflow records it a moment later.
      const trace = await waitFor(
        `the trace of ${completion.id} through API ${readBack + 1}`,
        async () => {
          const found = await json(await call(readBack, `/api/v1/requests/${completion.id}`));
          return found.status === 'completed' ? found : null;
        },
        60_000,
      );
      expect(trace).toMatchObject({ id: completion.id, status: 'completed' });
    }
  }),
  180_000,
);

it(
  'resumes a streamed completion cut after its first tokens through the other API process, from the journal',
  tracked(async () => {
    const control = simulatorControl(simulator.url);
    for (const [through, resumeThrough] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const content = `Stream through API ${through + 1}, resume through API ${resumeThrough + 1}`;
      // The provider pauses after two tokens: the client has seen events 0-2 (the role chunk, two deltas) and hangs up.
      await control.addFault({
        match: { model: 'gpt-4o' },
        times: 1,
        fault: { stall_after_tokens: 2, stall_ms: 3_000 },
      });
      const abort = new AbortController();
      const response = await call(through, '/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content }], stream: true }),
        signal: abort.signal,
      });
      expect(response.status).toBe(200);
      const seen: Array<{ id: string; data: Json }> = [];
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      while (!seen.some((event) => event.id === '2')) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended after ${JSON.stringify(seen)}`);
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (id !== undefined && data && data !== '[DONE]') seen.push({ id, data: JSON.parse(data) as Json });
        }
      }
      abort.abort();
      await reader.cancel().catch(() => undefined);
      const requestId = String(seen[0]!.data.id);
      const before = seen.filter((event) => Number(event.id) <= 2);

      const resumed = await call(resumeThrough, `/api/v1/requests/${requestId}/stream`, {
        headers: { 'Last-Event-ID': '2' },
      });
      expect(resumed.status).toBe(200);
      expect(resumed.headers.get('content-type')).toMatch(/text\/event-stream/);
      const events = await readSse(resumed);
      expect(events[0]!.id).toBe('3');
      expect(events.at(-1)!.data).toBe('[DONE]');
      const text = (list: Array<{ data: unknown }>) =>
        list
          .map((event) => (event.data as Json).choices?.[0]?.delta?.content ?? '')
          .filter((part: unknown) => typeof part === 'string')
          .join('');
      const whole = text(before) + text(events.filter((event) => event.data !== '[DONE]'));
      // The same answer as the provider gives unstreamed, through the API process that resumed it.
      const reference = await complete(resumeThrough, 'gpt-4o', content);
      expect(whole).toBe(reference.choices[0].message.content);
    }
  }),
  180_000,
);

it(
  'continues a session chat through the other API process, and reads the conversation back through either',
  tracked(async () => {
    const sessionId = `api:${randomUUID()}`;
    const chat = async (index: number, message: string) =>
      json(
        await call(index, '/api/v1/chat', { method: 'POST', body: JSON.stringify({ message, session_id: sessionId }) }),
      );
    const first = await chat(
      0,
      `My name is Ada. What is 2 + 3 * 4? ${callDirective('calculator', { expression: '2 + 3 * 4' })}`,
    );
    expect(first).toMatchObject({ session_id: sessionId, tool_calls: [{ tool: 'calculator', ok: true }] });
    expect(first.response).toContain('14');

    const control = simulatorControl(simulator.url);
    await control.resetRequests();
    const second = await chat(1, 'What is my name?');
    expect(second).toMatchObject({ session_id: sessionId });
    // The turn through API 2 sent the model the conversation so far, first turn included.
    const sent = JSON.stringify((await control.requests()).last?.body);
    expect(sent).toContain('My name is Ada.');
    expect(sent).toContain('What is my name?');

    for (const index of [0, 1]) {
      const stored = await json(await call(index, `/api/v1/sessions/${encodeURIComponent(sessionId)}`));
      expect(stored).toMatchObject({ key: sessionId, message_count: 6 });
      expect(stored.messages.map((message: { role: string }) => message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
        'user',
        'assistant',
      ]);
      expect(stored.messages[5].content).toBe(second.response);
    }
  }),
  180_000,
);

it(
  'follows a media job created through one API process to its end through the other, and serves its file from both',
  tracked(async () => {
    const created = await json(
      await call(1, '/api/v1/media/video', {
        method: 'POST',
        body: JSON.stringify({ prompt: 'a cat surfing a cluster [[takes 1s]]', duration: 10 }),
      }),
      202,
    );
    expect(created).toMatchObject({ status: 'queued' });
    const seen = new Set<string>();
    const job = await waitFor(
      `video ${String(created.video_id)} to end, polled through API 1`,
      async () => {
        const found = await json(await call(0, `/api/v1/media/video/${String(created.video_id)}`));
        seen.add(String(found.status));
        return found.status === 'completed' || found.status === 'failed' ? found : null;
      },
      120_000,
    );
    expect(job).toMatchObject({ video_id: created.video_id, status: 'completed', engine: 'replicate' });
    for (const index of [0, 1]) {
      const file = await call(index, String(job.video_url));
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('video/mp4');
      const bytes = new Uint8Array(await file.arrayBuffer());
      expect(new TextDecoder().decode(bytes.subarray(4, 8))).toBe('ftyp');
    }
  }),
  180_000,
);

/** The pid of the cluster's process running `script` whose environment has `variable`=`value`. */
async function clusterProcess(script: string, variable?: string, value?: string): Promise<number> {
  for (const info of await processTree(cluster!.process.pid!)) {
    if (!info.cmdline.includes(script)) continue;
    if (variable === undefined) return info.pid;
    const environ = await readFile(`/proc/${info.pid}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`${variable}=${value}`)) return info.pid;
  }
  throw new Error(`no ${script} ${variable ?? ''} among the cluster's processes`);
}

it(
  'starts an API process and a worker killed under it again, while the other API process serves',
  tracked(async () => {
    const restarted = (part: string) => cluster!.output(400).includes(`[cluster] ${part} is running again`);
    const api2 = await clusterProcess('api/server.ts', 'PORT', new URL(apis[1]!).port);
    const worker = await clusterProcess('worker/main.ts');
    process.kill(api2, 'SIGKILL');
    process.kill(worker, 'SIGKILL');
    // API 1 serves meanwhile.
    const meanwhile = await complete(0, 'gpt-4o-mini', 'While API 2 is down');
    expect(meanwhile.choices[0].message.content).toContain('While API 2 is down');
    await waitFor('API 2 to be started again', async () => restarted('API 2'), 180_000);
    await waitFor(
      'the killed worker to be started again',
      async () => /worker \d is running again/.test(cluster!.output(400)),
      60_000,
    );
    const after = await complete(1, 'gpt-4o-mini', 'After API 2 is back');
    expect(after.choices[0].message.content).toContain('After API 2 is back');
    const trace = await waitFor(
      `the trace of ${String(after.id)} through API 1`,
      async () => {
        const found = await json(await call(0, `/api/v1/requests/${String(after.id)}`));
        return found.status === 'completed' ? found : null;
      },
      60_000,
    );
    expect(trace).toMatchObject({ id: after.id });
  }),
  300_000,
);

it(
  'stops every process of it on SIGTERM',
  tracked(async () => {
    const pid = cluster!.process.pid!;
    // npm, the cluster script, its Temporal server, two API processes and two workers.
    const tree = await processTree(pid);
    expect(tree.filter((info) => info.cmdline.includes('api/server.ts'))).toHaveLength(2);
    expect(tree.filter((info) => info.cmdline.includes('worker/main.ts'))).toHaveLength(2);
    expect(tree.filter((info) => info.cmdline.includes('temporal-server'))).toHaveLength(1);
    cluster!.process.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      cluster!.exited,
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running after 120 s'), 120_000))),
    ]);
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(cluster!.output(40)).toContain('[cluster] stopped');
    await waitFor(
      'every process of the cluster to be gone',
      async () => (await Promise.all(tree.map((info) => isRunning(info.pid)))).every((running) => !running),
      30_000,
    );
    passed = failures === 0;
  }),
  180_000,
);
