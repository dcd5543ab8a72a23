/**
 * The platform's own parts failing one at a time while keyed completions flow, under `npm start` (scripts/start.ts):
 * SIGKILL of the Temporal dev server, of the embedded PostgreSQL's postmaster, of the API process and of the
 * background worker, and the Temporal server paused (SIGSTOP) until /health says so. For each, the platform serves
 * again by itself (its supervisor restarts what died: nothing here restarts anything), every answer a client got
 * meanwhile was a success or the documented outage (503 `service_unavailable` with Retry-After; a connection cut only
 * while the API process itself is gone), and afterwards every key that did not succeed, sent again, succeeds, every
 * key charged exactly once, with no credit left held.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { processTree, type ProcessInfo } from '../../scripts/lib/processes.ts';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import {
  createBusinessKey,
  platformSetup,
  sqlOnce,
  startPlatformProcess,
  tearDownPlatform,
  type PlatformProcess,
  type PlatformSetup,
} from '../helpers/platform-process.ts';
import { waitFor } from '../helpers/wait.ts';

const clients = 3;
// Each provider call takes a little while, so some are in flight whenever a part fails.
const providerLatencyMs = 300;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[part-failures] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  await simulatorControl(simulator.url).addFault({ fault: { latency_ms: providerLatencyMs } });
  // Holds whose start was cut by an outage are released by the platform's own sweep once 5 s old.
  setup = await platformSetup('part-failures', simulator.url, { CREDIT_HOLD_GRACE: '5s' });
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

interface Outcome {
  key: string;
  /** 0: no HTTP answer (the connection failed). */
  status: number;
  retryAfter: string | null;
  type?: string;
  id?: string;
  message?: string;
}

/** One keyed, non-streamed completion. */
async function complete(apiKey: string, idempotencyKey: string): Promise<Outcome> {
  try {
    const response = await fetch(`${setup.apiUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `Part test ${idempotencyKey}` }],
      }),
      signal: AbortSignal.timeout(120_000),
    });
    const body = (await response.json().catch(() => ({}))) as {
      id?: string;
      error?: { type?: string; message?: string };
    };
    return {
      key: idempotencyKey,
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      type: body.error?.type,
      id: body.id,
      message: body.error?.message,
    };
  } catch (error) {
    return { key: idempotencyKey, status: 0, retryAfter: null, message: String(error) };
  }
}

/** `clients` loops of keyed completions, each key new, until stopped. */
function startLoad(apiKey: string, label: string) {
  const outcomes: Outcome[] = [];
  let stopping = false;
  const loops = Array.from({ length: clients }, async (_, client) => {
    for (let index = 0; !stopping; index++) {
      const outcome = await complete(apiKey, `${label}-${client}-${index}`);
      outcomes.push(outcome);
      // A refused request is not sent again at once: the client waits a little, as Retry-After asks.
      if (outcome.status !== 200) await sleep(200);
    }
  });
  return {
    outcomes,
    successes: () => outcomes.filter((outcome) => outcome.status === 200).length,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** /health polled every 100 ms: what it answered, and the dependency it named as down. */
function watchHealth() {
  const seen: Array<{ status: number; down: string[] }> = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      try {
        const response = await fetch(`${setup.apiUrl}/health`, { signal: AbortSignal.timeout(5_000) });
        const body = (await response.json()) as { dependencies?: Record<string, { status: string }> };
        const down = Object.entries(body.dependencies ?? {})
          .filter(([, dependency]) => dependency.status !== 'ok')
          .map(([name]) => name);
        seen.push({ status: response.status, down });
      } catch {
        seen.push({ status: 0, down: [] });
      }
      await sleep(100);
    }
  })();
  return {
    seen,
    async stop() {
      stopping = true;
      await loop;
    },
  };
}

async function platformProcess(match: (info: ProcessInfo) => boolean, what: string): Promise<ProcessInfo> {
  const found = (await processTree(platform!.pid)).find(match);
  if (!found) throw new Error(`no ${what} among the platform's processes`);
  return found;
}

const temporalServer = (info: ProcessInfo) => info.cmdline.includes('start-dev');
// The postmaster: the postgres process whose parent is not itself a postgres process.
const postmaster = (tree: ProcessInfo[]) => (info: ProcessInfo) =>
  info.comm === 'postgres' && !tree.some((other) => other.pid === info.ppid && other.comm === 'postgres');

/** How many times the platform's log says `part` is running again. */
const restartsOf = (part: string) =>
  platform!
    .output(400)
    .split('\n')
    .filter((line) => line.includes(`${part} is running again`)).length;

interface Fault {
  name: string;
  /** Fails the part; resolves once the platform has recovered from it by itself. */
  run(): Promise<void>;
  /** Whether a client may see its connection fail (the API process itself is gone). */
  cutsConnections?: boolean;
}

it('serves again by itself after each of its parts fails, with 503 and Retry-After between, and every key charged once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'parts');

  const killAndAwaitRestart = (part: string, find: () => Promise<ProcessInfo>) => async () => {
    const before = restartsOf(part);
    const target = await find();
    process.kill(target.pid, 'SIGKILL');
    await waitFor(`${part} to run again`, async () => restartsOf(part) > before, 180_000);
  };
  const faults: Fault[] = [
    {
      name: 'temporal-kill',
      run: killAndAwaitRestart('the Temporal dev server', () => platformProcess(temporalServer, 'Temporal server')),
    },
    {
      name: 'postgres-kill',
      run: killAndAwaitRestart('the embedded PostgreSQL', async () => {
        const tree = await processTree(platform!.pid);
        const found = tree.find(postmaster(tree));
        if (!found) throw new Error('no postmaster among the platform processes');
        return found;
      }),
    },
    {
      name: 'api-kill',
      cutsConnections: true,
      run: killAndAwaitRestart('the API process', () =>
        platformProcess((info) => info.cmdline.includes('api/server.ts'), 'API process'),
      ),
    },
    {
      name: 'worker-kill',
      run: killAndAwaitRestart('the background worker', () =>
        platformProcess((info) => info.cmdline.includes('worker/main.ts'), 'worker'),
      ),
    },
    {
      name: 'temporal-pause',
      run: async () => {
        const server = await platformProcess(temporalServer, 'Temporal server');
        process.kill(server.pid, 'SIGSTOP');
        try {
          // Paused until the platform says so, on /health and to a client: then it is let go.
          await waitFor(
            '/health to report Temporal down',
            async () => {
              const response = await fetch(`${setup.apiUrl}/health`);
              const body = (await response.json()) as { dependencies: { temporal: { status: string } } };
              return response.status === 503 && body.dependencies.temporal.status === 'unavailable';
            },
            60_000,
          );
          const refused = await complete(key, `pause-probe-${Date.now()}`);
          expect(refused).toMatchObject({ status: 503, type: 'service_unavailable' });
          expect(Number(refused.retryAfter)).toBeGreaterThan(0);
          // The Messages door says the same outage as Anthropic does: 529 overloaded_error, with Retry-After.
          const message = await fetch(`${setup.apiUrl}/v1/messages`, {
            method: 'POST',
            headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
            body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }),
          });
          expect(message.status).toBe(529);
          expect(Number(message.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(await message.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
        } finally {
          process.kill(server.pid, 'SIGCONT');
        }
      },
    },
  ];

  const sent = new Map<string, Outcome>();
  for (const fault of faults) {
    const load = startLoad(key, fault.name);
    const health = watchHealth();
    try {
      await waitFor(`completions before ${fault.name}`, async () => load.successes() >= 3, 60_000);
      const began = Date.now();
      await fault.run();
      // Serving again: /health is 200 and new completions succeed.
      const servedBefore = load.successes();
      await waitFor(
        `the platform to serve again after ${fault.name}`,
        async () => {
          const response = await fetch(`${setup.apiUrl}/health`).catch(() => null);
          return response?.status === 200 && load.successes() >= servedBefore + 3;
        },
        120_000,
      );
      log(`${fault.name}: serving again ${((Date.now() - began) / 1000).toFixed(1)} s after the fault`);
    } finally {
      await load.stop();
      await health.stop();
    }
    const failed = load.outcomes.filter((outcome) => outcome.status !== 200);
    const statuses = [...new Set(load.outcomes.map((outcome) => outcome.status))].sort();
    log(`${fault.name}: ${load.outcomes.length} requests, statuses ${statuses.join(', ')}; ${failed.length} not 200`);
    for (const outcome of failed) {
      if (outcome.status === 0 && fault.cutsConnections) continue;
      // The documented outage, and nothing else: never a 500, never a failure that freezes the key.
      expect({ fault: fault.name, ...outcome, retryAfter: Number(outcome.retryAfter) > 0 }).toMatchObject({
        status: 503,
        type: 'service_unavailable',
        retryAfter: true,
      });
    }
    // /health never claimed ready with a dependency down, and never answered anything but 200 or 503.
    for (const answer of health.seen) {
      if (answer.status === 0 && fault.cutsConnections) continue;
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 200) expect(answer.down).toEqual([]);
    }
    for (const outcome of load.outcomes) sent.set(outcome.key, outcome);
  }

  // Every key that did not succeed, sent again once the platform serves: it succeeds.
  const resent = [...sent.values()].filter((outcome) => outcome.status !== 200);
  for (const outcome of resent) {
    const again = await complete(key, outcome.key);
    expect({ key: outcome.key, status: again.status, message: again.message }).toEqual({
      key: outcome.key,
      status: 200,
      message: undefined,
    });
    sent.set(outcome.key, again);
  }
  log(`${sent.size} keys, ${resent.length} sent again, all answered`);

  // Each key charged exactly once (one settlement of its workflow), and nothing left held once the sweep has run.
  const settled = await sqlOnce<{ workflow_id: string; settlements: number }>(
    setup.databaseUrl,
    `select workflow_id, count(*)::int as settlements from credit_ledger
     where user_id = $1 and kind = 'settle' group by workflow_id`,
    [userId],
  );
  const settlements = new Map(settled.map((row) => [row.workflow_id, row.settlements]));
  const problems = [...sent.values()]
    .map((outcome) => ({ key: outcome.key, settlements: settlements.get(`completion-${outcome.id}`) ?? 0 }))
    .filter((entry) => entry.settlements !== 1);
  expect(problems).toEqual([]);
  expect(settlements.size).toBe(sent.size);
  await waitFor(
    'no credits left held',
    async () => {
      const [account] = await sqlOnce<{ held: number }>(
        setup.databaseUrl,
        'select credits_held as held from users where id = $1',
        [userId],
      );
      return account?.held === 0;
    },
    120_000,
  );
  passed = true;
}, 900_000);
