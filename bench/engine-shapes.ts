/**
 * `npm run bench:engine` (about 4 minutes; `BENCH_QUICK=1` for a smoke run): what the Temporal engine alone costs per
 * request in two shapes of the same work, to weigh issue 29's "completions as updates of long-lived workflows" before
 * building it. Nothing of Tessera's runs but its worker class (the SDK's worker as the API process runs it: workflows
 * in its thread, no watchdog; worker/create-worker.ts) and the dev server as `npm start` runs it
 * (scripts/lib/temporal-server.ts: SQLite in WAL, the same dynamic config and Go collector settings).
 *
 * Each request is one local activity that waits the upstream's latency (`ENGINE_LATENCY_MS`, default 300) and hands
 * its answer to the waiting request in-process, as a completion's attempt hands its answer to the HTTP response:
 *
 * - **execution per request** (as completions run now): an eagerly started workflow per request, its first workflow
 *   task run here, the answer handed over by the activity; the workflow completes after it.
 * - **update on a lane**: `ENGINE_LANES` long-lived workflows (default 8), each request an update (`executeUpdate`,
 *   its id the request's) on one of them in turn; a lane continues as new every 500 requests.
 *
 * `ENGINE_CLIENTS` closed-loop clients (default 64) for `ENGINE_SECONDS` (default 20) per arm after a 5 s warm-up;
 * the arms alternate twice. CPU per request of this process (client and worker together: the API process's part) and
 * of the dev server, read from /proc, and the report in bench/engine-results.md with the CPU model.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection } from '@temporalio/worker';
import { ensureTemporalServer } from '../scripts/lib/temporal-server.ts';
import { installTemporalRuntime, quietBundlerLogger, SandboxedWorker } from '../worker/create-worker.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { ms, reportLead, writeResults } from './report.ts';
import { cpuSecondsOf } from './resources.ts';
import type { EngineActivities } from './engine-shapes/workflows.ts';
import { laneRunLength, serveUpdate } from './engine-shapes/workflows.ts';

const log = benchLog('bench:engine');
const address = process.env.ENGINE_TEMPORAL_ADDRESS ?? '127.0.0.1:17533';
const latencyMs = Number(process.env.ENGINE_LATENCY_MS ?? 300);
const lanes = Number(process.env.ENGINE_LANES ?? 8);
const clients = Number(process.env.ENGINE_CLIENTS ?? 64);
const seconds = quick ? 4 : Number(process.env.ENGINE_SECONDS ?? 20);
const warmUpSeconds = quick ? 1 : 5;
const taskQueue = 'engine-shapes';
const dataDirectory = fileURLToPath(new URL('../.data/bench-engine/', import.meta.url));

type Shape = 'execution per request' | 'update on a lane';

interface ArmFigures {
  shape: Shape;
  requests: number;
  failures: number;
  seconds: number;
  latencies: number[];
  /** CPU seconds of this process and of the dev server over the arm. */
  here: number;
  server: number;
}

/** Answers waited for by requests of this process, keyed by request id (the hub's part in the platform). */
const waiting = new Map<string, (answer: string) => void>();

const activities: EngineActivities = {
  async answer(id) {
    await sleep(latencyMs);
    const answer = `answer to ${id}`;
    waiting.get(id)?.(answer);
    return answer;
  },
};

/** The dev server's process: the `temporal server start-dev` child listening on this bench's port. */
async function serverPid(): Promise<number> {
  const port = address.split(':').at(-1)!;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const args = cmdline.split('\0');
    if (args.includes('start-dev') && args.includes(port)) return Number(entry);
  }
  throw new Error(`no dev server process found for port ${port}`);
}

const ownCpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

async function main(): Promise<void> {
  const startedAt = Date.now();
  await rm(dataDirectory, { recursive: true, force: true });
  await mkdir(dataDirectory, { recursive: true });
  installTemporalRuntime();
  const server = await ensureTemporalServer({ address, dbFile: `${dataDirectory}temporal.db`, uiPort: 0, log });
  if (!server.startedHere) throw new Error(`a Temporal server already answers at ${address}: stop it first`);
  const pid = await serverPid();
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection });
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./engine-shapes/workflows.ts', import.meta.url)),
    logger: quietBundlerLogger,
  });
  const worker = await SandboxedWorker.create({
    connection,
    taskQueue,
    workflowBundle: bundle,
    activities,
    maxConcurrentWorkflowTaskExecutions: 1000,
    maxConcurrentLocalActivityExecutions: 1000,
    maxCachedWorkflows: 2000,
  });
  const running = worker.run();
  const laneIds = Array.from({ length: lanes }, (_, index) => `lane-${index}-${randomUUID()}`);
  for (const workflowId of laneIds) await client.workflow.start('lane', { workflowId, taskQueue });
  let nextLane = 0;

  const request: Record<Shape, () => Promise<void>> = {
    'execution per request': async () => {
      const id = randomUUID();
      const answered = new Promise<string>((resolve) => waiting.set(id, resolve));
      try {
        const handle = await client.workflow.start('perRequest', {
          workflowId: `request-${id}`,
          taskQueue,
          args: [id],
          requestEagerStart: true,
        });
        // As a completion: the answer comes from the activity in this process; the result from the server otherwise.
        await (handle.eagerlyStarted ? answered : handle.result());
      } finally {
        waiting.delete(id);
      }
    },
    'update on a lane': async () => {
      const id = randomUUID();
      const lane = laneIds[nextLane++ % laneIds.length]!;
      await client.workflow.getHandle(lane).executeUpdate(serveUpdate, { args: [id], updateId: id });
    },
  };

  async function arm(shape: Shape, durationSeconds: number): Promise<ArmFigures> {
    const latencies: number[] = [];
    let failures = 0;
    let lastFailure = '';
    const hereBefore = ownCpu();
    const serverBefore = (await cpuSecondsOf(`/proc/${pid}`)) ?? 0;
    const began = performance.now();
    const deadline = began + durationSeconds * 1000;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < deadline) {
          const sent = performance.now();
          try {
            await request[shape]();
            latencies.push(performance.now() - sent);
          } catch (error) {
            failures++;
            lastFailure = error instanceof Error ? error.message : String(error);
          }
        }
      }),
    );
    const elapsed = (performance.now() - began) / 1000;
    const figures: ArmFigures = {
      shape,
      requests: latencies.length,
      failures,
      seconds: elapsed,
      latencies: latencies.sort((a, b) => a - b),
      here: ownCpu() - hereBefore,
      server: ((await cpuSecondsOf(`/proc/${pid}`)) ?? 0) - serverBefore,
    };
    if (failures) log(`  ${shape}: ${failures} failed, the last: ${lastFailure}`);
    return figures;
  }

  const shapes: Shape[] = ['execution per request', 'update on a lane'];
  const results: ArmFigures[] = [];
  for (let round = 0; round < (quick ? 1 : 2); round++) {
    for (const shape of shapes) {
      await arm(shape, warmUpSeconds);
      const figures = await arm(shape, seconds);
      results.push(figures);
      log(
        `  ${shape}: ${(figures.requests / figures.seconds).toFixed(0)}/s, CPU per request ` +
          `${ms((figures.here * 1000) / figures.requests)} here + ${ms((figures.server * 1000) / figures.requests)} dev server`,
      );
    }
  }
  worker.shutdown();
  await running;
  await connection.close();
  await server.stop();

  const p = (values: number[], q: number) => values[Math.min(values.length - 1, Math.floor(values.length * q))] ?? NaN;
  const rows = results.map((figures) => {
    const rate = figures.requests / figures.seconds;
    const here = (figures.here * 1000) / figures.requests;
    const dev = (figures.server * 1000) / figures.requests;
    return (
      `| ${figures.shape} | ${figures.requests} | ${figures.failures} | ${rate.toFixed(0)} | ` +
      `${ms(p(figures.latencies, 0.5))} | ${ms(p(figures.latencies, 0.99))} | ${ms(here)} | ${ms(dev)} | **${ms(here + dev)}** |`
    );
  });
  await writeResults(
    'engine-results.md',
    'Engine shapes: an execution per request against updates on long-lived workflows',
    [
      `${reportLead()}\`npm run bench:engine\`. The Temporal dev server as \`npm start\` runs it, in its own process; ` +
        `this process is the client and the worker (the SDK's worker as the API runs it). Each request: one local ` +
        `activity waiting ${latencyMs} ms; ${clients} closed-loop clients, ${seconds} s per arm after a ` +
        `${warmUpSeconds} s warm-up, the arms in turns; ${lanes} lanes, each continuing as new every ${laneRunLength} ` +
        `requests. Latencies in ms; CPU in ms per request.`,
      '',
      '| shape | requests | failed | requests/s | p50 | p99 | CPU here (client + worker) | CPU dev server | **CPU total** |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
    ],
    { startedAt, log },
  );
}

main().then(
  () => endBench(0),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    endBench(1);
  },
);
