/**
 * `npm run bench:faults`: the platform's parts failing one at a time under steady mixed load, in the production shape
 * on one machine (`npm run cluster`: two API processes, two workers, a Temporal server on PostgreSQL), with figures
 * per fault in bench/faults-results.md. It measures; it is not a test (test/platform/part-failures.test.ts is).
 *
 * The PostgreSQL is the bench's own (the embedded server, in the bench's data directory on a port of its own), so
 * that restarting it disturbs nothing else on the machine; the bench plays its service manager (it starts it again
 * after a shutdown or a kill, as systemd or Kubernetes would). The providers are the cluster's simulator, which the
 * bench makes hang or fail.
 *
 * Load, through both API processes in turn: keyed completions (one in three streamed), session chat turns (every
 * other one calling the calculator), keyed media jobs, agent messages, agent loops waiting for an approval, signed
 * webhook deliveries, RAG indexes, and a schedule firing every minute. Per fault it reports what clients saw (answers, failures
 * and whether each was the documented outage: 503 `service_unavailable` with Retry-After, or a connection cut while
 * an API process was gone), then, once the platform serves again: keys lost (a key that, sent again, does not
 * succeed), work run twice with a visible effect (a key answered with two different completions, a chat message
 * stored twice or left without its answer, a media job done twice), double charges (more than one settlement for a
 * request), credits still held a minute after recovery, the time until both API processes serve again, and the p99
 * of the answers during recovery.
 *
 * Faults: `api-kill`, `worker-kill`, `workers-down` (every background worker killed as it comes back, for 20 s),
 * `temporal-restart`, `postgres-restart` (fast shutdown), `postgres-kill`, `provider-hang`, `provider-500` (20 s
 * each), `disk-readonly` (the data directory remounted read-only for 20 s, where the machine allows a bind mount).
 * `-- --faults a,b` picks some; `--quick` shortens the phases.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { ensureDatabase, type DatabaseHandle } from '../scripts/lib/database.ts';
import { withClient } from '../db/databases.ts';
import { freePorts, processTree, startChild, type Child, type ProcessInfo } from '../scripts/lib/processes.ts';
import { Webhook } from 'standardwebhooks';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { simulatorControl } from '../simulator/server.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { percentile } from './load.ts';
import { loadNotes, ms, reportLead, writeResults } from './report.ts';

const execFileAsync = promisify(execFile);
const log = benchLog('bench:faults');
const root = fileURLToPath(new URL('..', import.meta.url));
const startedAt = Date.now();
const allFaults = [
  'api-kill',
  'worker-kill',
  'workers-down',
  'temporal-restart',
  'postgres-restart',
  'postgres-kill',
  'provider-hang',
  'provider-500',
  'disk-readonly',
] as const;
type FaultName = (typeof allFaults)[number];

const { values: flags } = parseArgs({
  options: { faults: { type: 'string' }, quick: { type: 'boolean' }, keep: { type: 'boolean' } },
});
const chosen = (flags.faults?.split(',') ?? [...allFaults]) as FaultName[];
for (const name of chosen) if (!allFaults.includes(name)) throw new Error(`unknown fault ${name}`);
/** How long a fault that lasts (a hang, workers kept down, a read-only disk) lasts. */
const faultMs = quick ? 8_000 : 20_000;
/** Load before each fault, and after the platform serves again. */
const warmMs = quick ? 3_000 : 8_000;
const afterMs = quick ? 4_000 : 10_000;
/** How long after recovery holds may take to clear (the issue's goal: none held a minute after). */
const heldWindowMs = 60_000;

interface Sent {
  kind: 'completion' | 'stream' | 'chat' | 'media' | 'agent' | 'loop' | 'webhook' | 'rag';
  key: string;
  api: number;
  at: number;
  ms: number;
  status: number;
  retryAfter: boolean;
  errorType?: string;
  /** The completion's id, the media job's, or the webhook delivery's run. */
  id?: string;
  /** A webhook delivery's `webhook-id` and body, to deliver it again. */
  delivery?: { id: string; body: string };
  /** A stream that ended with an in-band error or without its end. */
  cut?: boolean;
  /** An approval loop's site (published once approved) and where its stream stopped being read. */
  loop?: { site: string; turnId?: string; afterSeq: number; published: boolean };
}

interface FaultResult {
  name: FaultName;
  skipped?: string;
  sent: Sent[];
  faultAt: number;
  servedAgainMs: number;
  recoveryP99: number;
  lost: string[];
  twice: string[];
  doubleCharges: number;
  heldAfterMinute: number;
  heldClearedMs: number;
  /** The holds left a minute after recovery. */
  heldBy?: string[];
}

// --- the platform -------------------------------------------------------------------------------------------------

const dataDir = join(root, '.data', `bench-faults-${Date.now()}`);
const [gatewayPort, , , , temporalPort, postgresPort, simulatorPort] = await freePorts(7);
const apiPorts = [gatewayPort!, gatewayPort! + 2];
const masterKey = `te_${randomBytes(24).toString('base64url')}`;
let database: DatabaseHandle | undefined;
let cluster: Child | undefined;
const results: FaultResult[] = [];
const notes = loadNotes();
let failure: string | undefined;

async function startDatabase(): Promise<DatabaseHandle> {
  const saved = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
  process.env.EMBEDDED_POSTGRES_PORT = String(postgresPort);
  try {
    return await ensureDatabase({ dataDir, log: (line) => log(`[postgres] ${line}`) });
  } finally {
    if (saved !== undefined) process.env.DATABASE_URL = saved;
  }
}

/** Starts the bench's PostgreSQL again after it stopped (a fresh start may meet the old one's shared memory). */
async function restartDatabase(): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      database = await startDatabase();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(500);
    }
  }
}

async function postmasterPid(): Promise<number> {
  const text = await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8');
  return Number.parseInt(text.split('\n')[0]!, 10);
}

const apiUrl = (api: number) => `http://127.0.0.1:${apiPorts[api]}`;
/** The agent service of API process `api`. */
const agentsUrl = (api: number) => `http://127.0.0.1:${apiPorts[api]! + 1}`;

async function healthy(api: number): Promise<boolean> {
  try {
    const response = await fetch(`${apiUrl(api)}/health`, { signal: AbortSignal.timeout(3_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${cluster?.output(40) ?? ''}`);
    await sleep(200);
  }
}

async function clusterProcesses(): Promise<ProcessInfo[]> {
  return processTree(cluster!.process.pid!);
}

/** The process of the API serving `port` (its environment names it). */
async function apiProcess(api: number): Promise<ProcessInfo> {
  for (const info of await clusterProcesses()) {
    if (!info.cmdline.includes('api/server.ts')) continue;
    const environ = await readFile(`/proc/${info.pid}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`PORT=${apiPorts[api]}`)) return info;
  }
  throw new Error(`no API process on port ${apiPorts[api]}`);
}

const workersOf = async () => (await clusterProcesses()).filter((info) => info.cmdline.includes('worker/main.ts'));
const temporalOf = async () => {
  const found = (await clusterProcesses()).find((info) => /temporal-server|\/server --root/.test(info.cmdline));
  if (!found) throw new Error('no Temporal server among the cluster processes');
  return found;
};

// --- the load -----------------------------------------------------------------------------------------------------

let apiKey = '';
let userId = '';
/** The signed inbound webhook the load delivers to (its path, the same on either agent service, and its secret). */
let hook: { path: string; secret: string } | undefined;
/** The custom agent whose one tool, publish_site, waits for approval. */
let publisherId = '';
/** The scheduled task firing every minute through the run, and when it was created. */
let scheduleTask: { id: string; from: number } | undefined;
let scheduleLine = '';

/** The scheduled task's answers, one per minute expected: how many minutes had none, and how many had more than one. */
async function checkSchedule(): Promise<string> {
  if (!scheduleTask) return '';
  const until = Date.now();
  const response = await fetch(`${agentsUrl(1)}/history/${encodeURIComponent(`schedule:${scheduleTask.id}`)}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  if (!response.ok) return `the scheduled task's history could not be read (${response.status})`;
  const { messages } = (await response.json()) as { messages: Array<{ role: string; created_at: string }> };
  const perMinute = new Map<number, number>();
  for (const message of messages.filter((entry) => entry.role === 'assistant')) {
    const minute = Math.floor(new Date(message.created_at).getTime() / 60_000);
    perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
  }
  // The whole minutes between the first full one after its creation and the last full one before this check.
  const first = Math.ceil(scheduleTask.from / 60_000) + 1;
  const last = Math.floor(until / 60_000) - 2;
  let missed = 0;
  for (let minute = first; minute <= last; minute++) if (!perMinute.has(minute)) missed++;
  const twice = [...perMinute.values()].filter((count) => count > 1).length;
  return (
    `The scheduled task (\`* * * * *\`, through every fault): ${messages.filter((m) => m.role === 'assistant').length} ` +
    `answers; of the ${Math.max(0, last - first + 1)} whole minutes checked, ${missed} without an answer and ${twice} ` +
    'with more than one (a run that waited out an outage answers in a later minute).'
  );
}

/**
 * One POST of the load, timed: its status, whether a refusal said when to come back, its error type and the id it
 * named (a completion's, a media job's, an index's, a webhook run's). A stream is read to its end: `cut` when it did not
 * end with [DONE] or carried an in-band error.
 */
async function call(
  kind: Sent['kind'],
  key: string,
  api: number,
  url: string,
  body: string,
  options: { headers?: Record<string, string>; stream?: boolean; anonymous?: boolean; timeoutMs?: number } = {},
): Promise<Sent> {
  const at = Date.now();
  const sent = { kind, key, api, at };
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        ...(options.anonymous ? {} : { authorization: `Bearer ${apiKey}` }),
        'content-type': 'application/json',
        ...options.headers,
      },
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 180_000),
    });
    const retryAfter = Number(response.headers.get('retry-after')) > 0;
    if (options.stream && response.ok) {
      const text = await response.text();
      const id = /"id":"(chatcmpl-[^"]+)"/.exec(text)?.[1];
      const cut = !text.includes('data: [DONE]') || /"type":"error"|"error":\{/.test(text);
      return { ...sent, ms: Date.now() - at, status: response.status, retryAfter, id, cut };
    }
    const parsed = (await response.json().catch(() => ({}))) as {
      id?: string;
      video_id?: string;
      run_id?: string;
      error?: { type?: string };
    };
    const id = parsed.id ?? parsed.video_id ?? parsed.run_id;
    return { ...sent, ms: Date.now() - at, status: response.status, retryAfter, errorType: parsed.error?.type, id };
  } catch {
    return { ...sent, ms: Date.now() - at, status: 0, retryAfter: false };
  }
}

const completionBody = (key: string, stream: boolean) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: `Fault bench ${key}` }],
  ...(stream ? { stream: true } : {}),
});
const calculator = (expression: string) => `[[call calculator ${JSON.stringify({ expression })}]]`;
const keyed = (key: string) => ({ headers: { 'idempotency-key': key } });

const sendCompletion = (key: string, api: number, stream: boolean) =>
  call(
    stream ? 'stream' : 'completion',
    key,
    api,
    `${apiUrl(api)}/v1/chat/completions`,
    JSON.stringify(completionBody(key, stream)),
    { ...keyed(key), stream },
  );
const sendChat = (key: string, api: number, session: string, index: number) =>
  call(
    'chat',
    key,
    api,
    `${apiUrl(api)}/api/v1/chat`,
    JSON.stringify({
      session_id: session,
      message: index % 2 ? `What is ${index} * 7? ${calculator(`${index} * 7`)} (${key})` : `Hello again (${key})`,
    }),
  );
const sendMedia = (key: string, api: number) =>
  call(
    'media',
    key,
    api,
    `${apiUrl(api)}/api/v1/media/video`,
    JSON.stringify({ prompt: `fault bench ${key} [[takes 1s]]`, duration: 5 }),
    keyed(key),
  );
/** An agent message (routed chat on the agent service), streamed: answered when its stream ends with [DONE]. */
const sendAgent = (key: string, api: number) =>
  call(
    'agent',
    key,
    api,
    `${agentsUrl(api)}/chat/stream/${encodeURIComponent(`faults-agent-${key}`)}`,
    JSON.stringify({ message: `Hello agent (${key})`, session_id: `faults-agent-${key}` }),
    { headers: { accept: 'text/event-stream' }, stream: true },
  );
/** A text indexed for RAG through API `api` (202 queued); its index is followed to its end after the fault. */
const sendIndex = (key: string, api: number) =>
  call(
    'rag',
    key,
    api,
    `${agentsUrl(api)}/rag/index`,
    JSON.stringify({
      title: `Fault bench ${key}`,
      text: `Notes ${key}. The platform keeps every accepted job. A restarted part serves again by itself.`,
    }),
    { timeoutMs: 60_000 },
  );

/**
 * An agent loop waiting for an approval, as a person in the web app lives it: `POST /chat/loop/…` asks the publisher
 * agent to publish a page (`publish_site` needs approval), the client approves through the other API process when
 * `hitl_required` arrives (again while the answer is an outage or a cut), and reads the loop to its end; a stream cut
 * on the way is taken up again from its last event through the other API process (`GET /chat/turns/{id}/stream`).
 * Answered: the loop ended with `[DONE]` after its publish_site call came back ok.
 */
async function sendLoop(key: string, api: number): Promise<Sent> {
  const at = Date.now();
  const site = `f-${key}`.toLowerCase();
  const loop = { site, afterSeq: -1, published: false } as NonNullable<Sent['loop']>;
  const message = `Publishing it. [[call publish_site ${JSON.stringify({
    subdomain: site,
    title: `Fault bench ${key}`,
    html: `<!doctype html><html><head><title>${key}</title></head><body><p>${key}</p></body></html>`,
  })}]] [[iterations 2]]`;
  let response: Response;
  try {
    response = await fetch(`${agentsUrl(api)}/chat/loop/${encodeURIComponent(`web:faults-loop-${key}`)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ message, agent_id: publisherId }),
      signal: AbortSignal.timeout(180_000),
    });
  } catch {
    return { kind: 'loop', key, api, at, ms: Date.now() - at, status: 0, retryAfter: false, loop };
  }
  const retryAfter = Number(response.headers.get('retry-after')) > 0;
  if (!response.ok) {
    const parsed = (await response.json().catch(() => ({}))) as { error?: { type?: string } };
    const failed = { status: response.status, retryAfter, errorType: parsed.error?.type };
    return { kind: 'loop', key, api, at, ms: Date.now() - at, ...failed, loop };
  }
  loop.turnId = response.headers.get('x-turn-id') ?? undefined;
  const ended = await followLoop(loop, response, 1 - api, Date.now() + 180_000);
  const answered = { status: 200, retryAfter, id: loop.turnId, cut: !ended || !loop.published };
  return { kind: 'loop', key, api, at, ms: Date.now() - at, ...answered, loop };
}

/**
 * Reads a loop's events from `first` (the POST's answer, or none) and then from `GET /chat/turns/{id}/stream` through
 * API `other` after each cut, approving its approval request, until `[DONE]` or `deadline`; true when it ended.
 */
async function followLoop(
  loop: NonNullable<Sent['loop']>,
  first: Response | null,
  other: number,
  deadline: number,
): Promise<boolean> {
  let response = first;
  while (Date.now() < deadline) {
    if (!response && loop.turnId) {
      response = await fetch(`${agentsUrl(other)}/chat/turns/${encodeURIComponent(loop.turnId)}/stream`, {
        headers: { authorization: `Bearer ${apiKey}`, 'last-event-id': String(loop.afterSeq) },
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      }).catch(() => null);
      if (response && !response.ok) {
        await response.body?.cancel();
        response = null;
      }
    }
    if (!response) {
      if (!loop.turnId) return false;
      await sleep(500);
      continue;
    }
    try {
      const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const event of events) {
        if (event.data === '[DONE]') return true;
        if (event.id) loop.afterSeq = Number(event.id);
        const data = JSON.parse(event.data) as {
          type: string;
          id?: string;
          turn_id?: string;
          ok?: boolean;
          status?: string;
        };
        if (data.type === 'routed' && data.turn_id) loop.turnId = data.turn_id;
        if (data.type === 'hitl_required' && data.id) await approve(data.id, other, deadline);
        if (data.type === 'tool' && data.status === 'done' && data.ok) loop.published = true;
      }
    } catch {
      // Cut: taken up again through the other API process.
    }
    response = null;
  }
  return false;
}

/** Approves through API `api` until it is admitted (200) or was already decided (409), or `deadline`. */
async function approve(id: string, api: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    const answer = await fetch(`${agentsUrl(api)}/chat/approvals/${encodeURIComponent(id)}/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(30_000),
    }).catch(() => null);
    await answer?.body?.cancel();
    if (answer?.status === 200 || answer?.status === 409) return;
    await sleep(500);
    api = 1 - api;
  }
}

/** A Standard Webhooks delivery to the load's hook through API `api`, signed now (or delivered again as it was). */
async function sendWebhook(key: string, api: number, again?: { id: string; body: string }): Promise<Sent> {
  const delivery = again ?? { id: `msg_${key}`, body: JSON.stringify({ event: 'order.created', order: { id: key } }) };
  const signedAt = new Date();
  const headers = {
    'webhook-id': delivery.id,
    'webhook-timestamp': String(Math.floor(signedAt.getTime() / 1000)),
    'webhook-signature': new Webhook(hook!.secret).sign(delivery.id, signedAt, delivery.body),
  };
  const outcome = await call('webhook', key, api, `${agentsUrl(api)}${hook!.path}`, delivery.body, {
    headers,
    anonymous: true,
    timeoutMs: 60_000,
  });
  return { ...outcome, delivery };
}

/** The status of what `path` on API `api`'s agent service shows (a webhook run, an index), or why it is unreadable. */
async function statusAt(path: string, api: number): Promise<string> {
  const response = await fetch(`${agentsUrl(api)}${path}`, { headers: { authorization: `Bearer ${apiKey}` } }).catch(
    () => null,
  );
  if (!response?.ok) return `unreadable (${response?.status ?? 'no answer'})`;
  return ((await response.json()) as { status?: string }).status ?? 'unknown';
}

/** Follows each of `paths` until it is done or failed (until `deadline`); returns those that did not end done. */
async function notDone(paths: Array<{ path: string; api: number }>, deadline: number): Promise<string[]> {
  const problems: string[] = [];
  for (const { path, api } of paths) {
    let state = await statusAt(path, api);
    while (state !== 'done' && state !== 'failed' && Date.now() < deadline) {
      await sleep(500);
      state = await statusAt(path, api);
    }
    if (state !== 'done') problems.push(`${path} ${state}`);
  }
  return problems;
}

function startLoad(label: string) {
  const sent: Sent[] = [];
  let stopping = false;
  const session = `faults-${label}-${randomBytes(3).toString('hex')}`;
  const loop = async (worker: (index: number) => Promise<Sent>) => {
    for (let index = 0; !stopping; index++) {
      const outcome = await worker(index);
      sent.push(outcome);
      if (outcome.status !== 200 && outcome.status !== 202) await sleep(250);
    }
  };
  const loops = [
    ...[0, 1, 2].map((client) =>
      loop((index) => sendCompletion(`${label}-c${client}-${index}`, (client + index) % 2, index % 3 === 2)),
    ),
    loop((index) => sendChat(`${label}-chat-${index}`, index % 2, session, index)),
    loop(async (index) => {
      const outcome = await sendMedia(`${label}-m-${index}`, index % 2);
      await sleep(1_000);
      return outcome;
    }),
    loop((index) => sendAgent(`${label}-a-${index}`, (index + 1) % 2)),
    loop((index) => sendLoop(`${label}-l-${index}`, index % 2)),
    loop(async (index) => {
      const outcome = await sendWebhook(`${label}-w-${index}`, index % 2);
      await sleep(500);
      return outcome;
    }),
    loop(async (index) => {
      const outcome = await sendIndex(`${label}-r-${index}`, index % 2);
      await sleep(2_000);
      return outcome;
    }),
  ];
  return {
    sent,
    session,
    succeeded: () => sent.filter((outcome) => outcome.status === 200 || outcome.status === 202).length,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

// --- the faults ---------------------------------------------------------------------------------------------------

/** Injects the fault; resolves when it is over (a kill at once, a lasting fault after `faultMs`). Null: not here. */
async function inject(name: FaultName): Promise<string | null> {
  const control = simulatorControl(`http://127.0.0.1:${simulatorPort}`);
  switch (name) {
    case 'api-kill':
      process.kill((await apiProcess(0)).pid, 'SIGKILL');
      return null;
    case 'worker-kill': {
      const [worker] = await workersOf();
      if (!worker) return 'no background worker found';
      process.kill(worker.pid, 'SIGKILL');
      return null;
    }
    case 'workers-down': {
      const until = Date.now() + faultMs;
      while (Date.now() < until) {
        for (const worker of await workersOf()) process.kill(worker.pid, 'SIGKILL');
        await sleep(100);
      }
      return null;
    }
    case 'temporal-restart':
      process.kill((await temporalOf()).pid, 'SIGTERM');
      return null;
    case 'postgres-restart':
    case 'postgres-kill': {
      const pid = await postmasterPid();
      // SIGINT is PostgreSQL's fast shutdown (what `pg_ctl stop -m fast` sends).
      process.kill(pid, name === 'postgres-kill' ? 'SIGKILL' : 'SIGINT');
      while (await isAlive(pid)) await sleep(50);
      await restartDatabase();
      return null;
    }
    case 'provider-hang':
    case 'provider-500': {
      const fault = name === 'provider-hang' ? { latency_ms: 600_000 } : { status: 500 };
      await control.addFault({ match: { protocol: 'openai' }, fault });
      await sleep(faultMs);
      await control.clearFaults();
      return null;
    }
    case 'disk-readonly': {
      try {
        await execFileAsync('mount', ['--bind', dataDir, dataDir]);
      } catch (error) {
        return `a bind mount is not allowed here (${(error as Error).message.split('\n')[0]})`;
      }
      try {
        await execFileAsync('mount', ['-o', 'remount,ro,bind', dataDir]);
        await sleep(faultMs);
      } catch (error) {
        return `a read-only remount is not allowed here (${(error as Error).message.split('\n')[0]})`;
      } finally {
        await execFileAsync('umount', [dataDir]).catch(() => undefined);
      }
      return null;
    }
  }
}

async function isAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  return stat !== '' && state !== 'Z' && state !== 'X';
}

async function sql<Row>(text: string, values: unknown[]): Promise<Row[]> {
  return withClient(database!.url, async (client) => (await client.query(text, values)).rows as Row[]);
}

async function runFault(name: FaultName): Promise<FaultResult> {
  log(`${name}: load`);
  notes.note(name);
  const load = startLoad(name);
  const result: FaultResult = {
    name,
    sent: load.sent,
    faultAt: 0,
    servedAgainMs: Number.NaN,
    recoveryP99: Number.NaN,
    lost: [],
    twice: [],
    doubleCharges: 0,
    heldAfterMinute: 0,
    heldClearedMs: Number.NaN,
  };
  let recoveredAt = 0;
  try {
    await sleep(warmMs);
    result.faultAt = Date.now();
    log(`${name}: fault`);
    const skipped = await inject(name);
    if (skipped) result.skipped = skipped;
    // Serving again: both API processes ready, and a completion through each answered.
    await waitUntil(`both APIs to serve after ${name}`, async () => {
      if (!(await healthy(0)) || !(await healthy(1))) return false;
      const probes = await Promise.all(
        [0, 1].map((api) => sendCompletion(`${name}-probe-${api}-${Date.now()}`, api, false)),
      );
      return probes.every((probe) => probe.status === 200);
    });
    recoveredAt = Date.now();
    result.servedAgainMs = recoveredAt - result.faultAt;
    log(`${name}: serving again after ${(result.servedAgainMs / 1000).toFixed(1)} s`);
    await sleep(afterMs);
  } finally {
    await load.stop();
  }
  const recovery = load.sent.filter(
    (outcome) =>
      (outcome.status === 200 || outcome.status === 202) &&
      outcome.at >= result.faultAt &&
      outcome.at <= recoveredAt + afterMs,
  );
  result.recoveryP99 = percentile(
    recovery.map((outcome) => outcome.ms),
    99,
  );

  // Every keyed request sent again: it must succeed, and with the same answer it had (a completion's id).
  const firstIds = new Map<string, string>();
  for (const outcome of load.sent) {
    if (outcome.kind === 'chat' || !outcome.id) continue;
    if (outcome.status === 200 || outcome.status === 202) firstIds.set(outcome.key, outcome.id);
  }
  const resentRuns: string[] = [];
  for (const outcome of load.sent) {
    if (outcome.kind === 'chat' || outcome.kind === 'agent' || outcome.kind === 'loop' || outcome.kind === 'rag')
      continue;
    if (outcome.kind === 'webhook') {
      // Delivered again as it was (a sender's retry): the same run, which reaches its end.
      const again = await sendWebhook(outcome.key, outcome.api, outcome.delivery);
      if (again.id) resentRuns.push(again.id);
      if (again.status !== 202 && again.status !== 200) result.lost.push(`${outcome.key} (${again.status})`);
      else if (outcome.id && again.id !== outcome.id)
        result.twice.push(`${outcome.key}: ${outcome.id} then ${again.id}`);
      continue;
    }
    const again =
      outcome.kind === 'media'
        ? await sendMedia(outcome.key, outcome.api)
        : await sendCompletion(outcome.key, outcome.api, outcome.kind === 'stream');
    if (again.status !== 200 && again.status !== 202) result.lost.push(`${outcome.key} (${again.status})`);
    const first = firstIds.get(outcome.key);
    if (first && again.id && again.id !== first) result.twice.push(`${outcome.key}: ${first} then ${again.id}`);
  }
  // Every accepted webhook delivery's run and every accepted index reach their end (read through the other API process).
  const runs = [
    ...new Set([...load.sent.flatMap((sent) => (sent.kind === 'webhook' && sent.id ? [sent.id] : [])), ...resentRuns]),
  ];
  const followed = [
    ...runs.map((runId) => ({ path: `/webhook/runs/${encodeURIComponent(runId)}`, api: 1 })),
    ...load.sent
      .filter((sent) => sent.kind === 'rag' && sent.id)
      .map((sent) => ({ path: `/rag/index/${encodeURIComponent(sent.id!)}`, api: 1 - sent.api })),
  ];
  result.lost.push(...(await notDone(followed, Date.now() + 180_000)));
  // Every accepted approval loop reaches its end, its page published (each cut one followed again to its end).
  const loops = load.sent.filter((sent) => sent.kind === 'loop' && sent.status === 200 && sent.loop);
  for (const outcome of loops) {
    if (outcome.loop!.turnId && !outcome.loop!.published) {
      await followLoop(outcome.loop!, null, 1 - outcome.api, Date.now() + 120_000);
    }
  }
  const listed = await fetch(`${agentsUrl(1)}/deploy/sites`, { headers: { authorization: `Bearer ${apiKey}` } });
  const sites = listed.ok ? ((await listed.json()) as { sites: Array<{ subdomain: string }> }).sites : [];
  for (const outcome of loops) {
    const published = sites.filter((site) => site.subdomain === outcome.loop!.site).length;
    if (published === 0) result.lost.push(`loop ${outcome.key} (${outcome.loop!.turnId ?? 'no turn id'}): no page`);
  }
  // The chat session: each message stored once, and answered.
  const session = await fetch(`${apiUrl(0)}/api/v1/sessions/${load.session}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  if (session.ok) {
    const { messages } = (await session.json()) as { messages: Array<{ role: string; content: string | null }> };
    const users = messages.filter((message) => message.role === 'user');
    for (const outcome of load.sent.filter((sent) => sent.kind === 'chat')) {
      const stored = users.filter((message) => message.content?.includes(`(${outcome.key})`)).length;
      if (stored > 1) result.twice.push(`chat ${outcome.key} stored ${stored} times`);
      if (outcome.status === 200 && stored === 0) result.lost.push(`chat ${outcome.key} answered but not stored`);
    }
  }
  // Settlements per request: a completion or a media job is served once, so one settlement (a chat turn settles each
  // of its model calls: its workflow may have several, one per attempt number, which the ledger's keys keep unique).
  const charges = await sql<{ workflow_id: string; settlements: number }>(
    `select workflow_id, count(*)::int as settlements from credit_ledger
     where user_id = $1 and kind = 'settle' and created_at >= to_timestamp($2 / 1000.0)
       and (workflow_id like 'completion-%' or workflow_id like 'media-%')
     group by workflow_id having count(*) > 1`,
    [userId, result.faultAt - warmMs],
  );
  result.doubleCharges = charges.length;
  // Holds: none should be left a minute after recovery (the load ended and every key was sent again meanwhile).
  for (;;) {
    const [row] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
    result.heldAfterMinute = row?.held ?? 0;
    if (result.heldAfterMinute === 0) {
      result.heldClearedMs = Date.now() - recoveredAt;
      break;
    }
    if (Date.now() - recoveredAt > heldWindowMs) {
      const open = await sql<{ workflow_id: string; attempt: number; amount: number }>(
        `select r.workflow_id, r.attempt, r.amount from credit_ledger r
         where r.user_id = $1 and r.kind = 'reserve' and not exists (
           select 1 from credit_ledger e where e.user_id = r.user_id and e.workflow_id = r.workflow_id
             and e.attempt = r.attempt and e.kind in ('settle', 'release'))`,
        [userId],
      );
      result.heldBy = open.map((hold) => `${hold.workflow_id}#${hold.attempt} (${hold.amount})`);
      break;
    }
    await sleep(500);
  }
  return result;
}

// --- the run ------------------------------------------------------------------------------------------------------

/** How many of each kind were sent and answered, e.g. `completion 20/20, agent 4/3`. */
function kindCounts(sent: Sent[]): string {
  const kinds = [...new Set(sent.map((outcome) => outcome.kind))];
  return kinds
    .map((kind) => {
      const ofKind = sent.filter((outcome) => outcome.kind === kind);
      const answered = ofKind.filter((outcome) => (outcome.status === 200 || outcome.status === 202) && !outcome.cut);
      return `${kind} ${answered.length}/${ofKind.length}`;
    })
    .join(', ');
}

function rowOf(result: FaultResult): string {
  if (result.skipped && result.sent.length === 0) return `| ${result.name} | not run: ${result.skipped} |||||||||`;
  const failed = result.sent.filter((outcome) => outcome.status !== 200 && outcome.status !== 202);
  const documented = failed.filter(
    (outcome) =>
      (outcome.status === 503 && outcome.errorType === 'service_unavailable' && outcome.retryAfter) ||
      (outcome.status === 0 && result.name === 'api-kill') ||
      outcome.status === 502,
  );
  const cut = result.sent.filter((outcome) => outcome.cut).length;
  const statuses = [...new Set(failed.map((outcome) => outcome.status))].sort().join(', ') || '–';
  return [
    '',
    `${result.name}${result.skipped ? ` (${result.skipped})` : ''}`,
    `${result.sent.length} (${kindCounts(result.sent)})`,
    `${failed.length} (${statuses})${cut ? `, ${cut} streams cut` : ''}`,
    `${documented.length} of ${failed.length}`,
    String(result.lost.length),
    String(result.twice.length),
    String(result.doubleCharges),
    result.heldAfterMinute ? `${result.heldAfterMinute} held` : `0 (${(result.heldClearedMs / 1000).toFixed(1)} s)`,
    `${(result.servedAgainMs / 1000).toFixed(1)} s`,
    ms(result.recoveryP99),
    '',
  ].join(' | ');
}

try {
  await mkdir(dataDir, { recursive: true });
  database = await startDatabase();
  log(`PostgreSQL on ${postgresPort}; starting the cluster`);
  cluster = startChild({
    name: 'npm run cluster',
    command: process.execPath,
    args: [
      `${root}scripts/cluster.ts`,
      '--apis',
      '2',
      '--workers',
      '2',
      '--port',
      String(gatewayPort),
      '--temporal-port',
      String(temporalPort),
      '--data-dir',
      join(dataDir, 'cluster'),
      '--database-url',
      database.url,
    ],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MASTER_KEY: masterKey,
      SIMULATOR_PORT: String(simulatorPort),
      // Holds whose start an outage cut are released by the platform's sweep once this old.
      CREDIT_HOLD_GRACE: '20s',
      // All the load comes from one address (loopback): the agent service's per-IP limit, meant for many clients,
      // would refuse it once a fault makes the clients retry.
      AGENT_IP_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: 'warn',
    },
    logFile: join(dataDir, 'cluster.log'),
  });
  await waitUntil('both API processes', async () => (await healthy(0)) && (await healthy(1)), 600_000);
  const created = await fetch(`${apiUrl(0)}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${masterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `faults-${Date.now()}@example.com`, plan: 'business' }),
  });
  ({ key: apiKey, user_id: userId } = (await created.json()) as { key: string; user_id: string });
  await fetch(`${apiUrl(0)}/api/v1/account/${userId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${masterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ custom_limits: { per_hour: 100_000_000, per_day: 100_000_000 } }),
  });
  const createdHook = await fetch(`${agentsUrl(0)}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: 'general' }),
  });
  if (createdHook.status !== 201) throw new Error(`POST /webhooks: ${createdHook.status} ${await createdHook.text()}`);
  const made = (await createdHook.json()) as { url: string; secret: string };
  const madeUrl = new URL(made.url);
  hook = { path: `${madeUrl.pathname}${madeUrl.search}`, secret: made.secret };
  const publisher = await fetch(`${agentsUrl(0)}/agents/custom`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Publisher',
      description: 'Publishes small web pages',
      system_prompt: 'You publish web pages for the user.',
      tools: ['publish_site'],
    }),
  });
  if (publisher.status !== 201) throw new Error(`POST /agents/custom: ${publisher.status} ${await publisher.text()}`);
  publisherId = ((await publisher.json()) as { id: string }).id;
  // A scheduled task firing every minute through all the faults: at the end, each minute answered once.
  const scheduled = await fetch(`${agentsUrl(0)}/schedule/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ cron: '* * * * *', agent_id: 'general', message: 'Give me a status line.' }),
  });
  if (scheduled.status !== 201) throw new Error(`POST /schedule/tasks: ${scheduled.status} ${await scheduled.text()}`);
  scheduleTask = { id: ((await scheduled.json()) as { id: string }).id, from: Date.now() };
  for (const name of chosen) {
    try {
      results.push(await runFault(name));
    } catch (error) {
      failure = `${name}: ${(error as Error).message}`;
      log(failure);
      break;
    }
  }
  scheduleLine = await checkSchedule().catch((error: unknown) => `the schedule could not be checked: ${String(error)}`);
} catch (error) {
  failure = (error as Error).message;
  log(failure);
} finally {
  await cluster?.stop(60_000);
  await database?.stop();
}

const lines = [
  `${reportLead()}The production shape (\`npm run cluster\`: 2 API processes, 2 workers, a Temporal server on ` +
    'PostgreSQL, the simulator as every provider) on a PostgreSQL of its own, under steady load through both API ' +
    'processes: 3 clients of keyed completions (one request in three streamed), 1 of session chat turns (every ' +
    'other one calling the calculator), 1 of keyed media jobs, 1 of agent messages (routed, streamed), 1 of agent loops ' +
    'that wait for an approval (publish_site: approved through the other API process, each loop followed to its ' +
    'end and its page looked for), 1 of signed ' +
    'webhook deliveries (Standard Webhooks; each delivered again afterwards, and its run followed to its end), 1 ' +
    'of texts indexed for RAG (each index followed to its end), and a scheduled task firing every minute. One fault at a time, with recovery between.',
  '',
  '- **requests**: by kind, answered in full of sent. **clients saw fail**: answers that were not 200/202, with their statuses; **documented**: of those, a 503 ' +
    '`service_unavailable` with Retry-After, a 502 `upstream_error` (the provider itself failing), or a connection ' +
    'cut while the API process it went to was gone.',
  '- **lost**: keys that, sent again once the platform served, did not succeed; chat messages answered but not ' +
    'stored; approval loops whose page was never published. **twice**: a key answered with two different completions or jobs, a chat message stored twice. ' +
    '**double charges**: requests with more than one settlement. **held**: credits still held a minute after ' +
    'recovery, counted from recovery, after every key was sent again (in brackets, how long until none was). **serves again**: from the fault until both API processes ' +
    'answer /health 200 and a completion through each. **p99 in recovery**: of the answers from the fault until ' +
    `${afterMs / 1000} s after recovery.`,
  '',
  '| fault | requests | clients saw fail | documented | lost | twice | double charges | held | serves again | p99 in recovery (ms) |',
  '|---|---|---|---|---|---|---|---|---|---|',
  ...results.map(rowOf),
  '',
  ...(scheduleLine ? [scheduleLine, ''] : []),
  ...(failure ? [`**The run stopped:** ${failure}`, ''] : []),
  ...results.flatMap((result) =>
    result.lost.length || result.twice.length || result.heldBy?.length
      ? [
          `${result.name}: lost ${result.lost.join('; ') || 'none'}; twice ${result.twice.join('; ') || 'none'}; ` +
            `held by ${result.heldBy?.join('; ') || 'none'}`,
          '',
        ]
      : [],
  ),
  ...notes.lines(),
];
await writeResults('faults-results.md', 'Fault matrix (`npm run bench:faults`)', lines, { startedAt, log });
// `--keep` keeps the data directory: the cluster's logs (logs/), its PostgreSQL, its Temporal config.
if (!failure && !flags.keep) await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
else log(`kept ${dataDir}`);
endBench(failure ? 1 : 0);
