/**
 * `npm run bench`: the gateway's added latency, time to first token and sustained durable completions per second
 * against direct calls to the same provider simulator, plus memory. One process hosts everything the test
 * platform starts (gateway API, its in-process Temporal worker, the simulator) and the load clients; Temporal
 * (dev server) and PostgreSQL (DATABASE_URL or embedded) run beside it, as in the tests.
 *
 * Prints a Markdown report and writes it to bench/results.md. BENCH_QUICK=1 runs a fifth of the load (smoke).
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { cpus, platform, arch } from 'node:os';
import pg from 'pg';
import type { TestPlatform } from '../test/helpers/platform.ts';
import type { Sample, Target } from './http-client.ts';

// Before the platform modules load: their loggers read these once.
process.env.LOG_LEVEL = 'error';
process.env.TEMPORAL_LOG_LEVEL = 'ERROR';

const { default: globalSetup } = await import('../test/helpers/global-setup.ts');
const { default: globalTeardown } = await import('../test/helpers/global-teardown.ts');
const { startTestPlatform } = await import('../test/helpers/platform.ts');
const { agent, post } = await import('./http-client.ts');
const { runLoad, summarize } = await import('./load.ts');
const { memoryNow, rssMiBOf, startCpuMeter, startMemoryPeak, temporalServerPids } = await import('./resources.ts');
const { latencyTable, memoryTable, ms, stageTable, threadTable, throughputTable, targets } =
  await import('./report.ts');
const { profile } = await import('./profile.ts');
const { baselineRoundTrips, beginTrace, endTrace, installFetchSpy, summarizeStages, withSpans } =
  await import('./spans.ts');

const quick = process.env.BENCH_QUICK === '1';
const scale = (n: number) => (quick ? Math.max(10, Math.round(n / 5)) : n);
const plan = {
  warmup: scale(50),
  latencyRequests: { 1: scale(500), 16: scale(2000) } as Record<number, number>,
  cellMaxMs: 30_000,
  throughputClients: 32,
  throughputMs: quick ? 3_000 : 10_000,
  profileMs: quick ? 2_000 : 5_000,
  spanRequests: scale(300),
};

const model = 'gpt-4o-mini';
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'Say hello to the benchmark in one short sentence.';
const bodyFor = (modelId: string, stream: boolean) =>
  JSON.stringify({
    model: modelId,
    messages: [{ role: 'user', content: prompt }],
    ...(stream ? { stream: true } : {}),
  });

/** The report as Prettier formats Markdown here (aligned tables); unformatted should Prettier fail. */
async function formatMarkdown(markdown: string, path: string): Promise<string> {
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(path)) ?? {};
    return await prettier.format(markdown, { ...options, filepath: path });
  } catch {
    return markdown;
  }
}

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

async function temporalRss(): Promise<number | undefined> {
  let total: number | undefined;
  for (const pid of await temporalServerPids()) {
    const rss = await rssMiBOf(pid);
    if (rss !== undefined) total = (total ?? 0) + rss;
  }
  return total;
}

let simulatorUrl: string | undefined;
// The upstream fetch is captured when the first adapter is built: wrap it before the gateway starts.
installFetchSpy(() => simulatorUrl);

const startedAt = Date.now();
let platformHandle: TestPlatform | undefined;
let setupDone = false;
let exitCode = 0;
try {
  log('starting Temporal and the template database (global setup)');
  // Start-up chatter (e.g. the migrator's log lines) goes to stderr: stdout is the report.
  const stdoutWrite = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  let testPlatform: TestPlatform;
  try {
    await globalSetup();
    setupDone = true;
    log('starting the gateway platform');
    testPlatform = await startTestPlatform({ LOG_LEVEL: 'error' });
  } finally {
    process.stdout.write = stdoutWrite;
  }
  platformHandle = testPlatform;
  simulatorUrl = testPlatform.simulatorUrl;
  // A metered, rate-limited account, as customers are: business plan with limits far above the load (the
  // windows are still counted), and credits to spare. The operator key is the unmetered, unlimited contrast.
  const { key, user_id: userId } = await testPlatform.createKey(undefined, 'business');
  const adminUrl = process.env.TESSERA_TEST_DATABASE_URL!;
  const accountDatabase = new pg.Client({ connectionString: testPlatform.databaseUrl });
  await accountDatabase.connect();
  await accountDatabase.query(
    `update users set custom_limits = '{"per_hour": 100000000, "per_day": 100000000}', credits_balance = credits_balance + 1000000000 where id = $1`,
    [userId],
  );
  await accountDatabase.query(
    `insert into credit_ledger (key, user_id, kind, amount, note, created_at) values ($1, $2, 'adjust', 1000000000, 'bench', now())`,
    [`adjust:${userId}:bench`, userId],
  );
  await accountDatabase.end();

  const sides: Record<'gateway' | 'direct' | 'unmetered', Target & { model: string }> = {
    gateway: {
      url: `${testPlatform.gateway.url}/v1/chat/completions`,
      headers: { authorization: `Bearer ${key}` },
      model,
    },
    unmetered: {
      url: `${testPlatform.gateway.url}/v1/chat/completions`,
      headers: { authorization: `Bearer ${testPlatform.masterKey}` },
      model,
    },
    direct: {
      url: `${testPlatform.simulatorUrl}/v1/chat/completions`,
      headers: { authorization: 'Bearer bench' },
      model: upstreamModel,
    },
  };
  const call = (side: 'gateway' | 'direct' | 'unmetered', stream: boolean) => {
    const target = sides[side];
    const body = bodyFor(target.model, stream);
    return () => post(target, body, stream);
  };

  // Sanity: both sides answer, and the gateway really ran a workflow for it.
  for (const side of ['gateway', 'direct'] as const) {
    for (const stream of [false, true]) {
      const sample = await call(side, stream)();
      if (!sample.ok)
        throw new Error(`${side} ${stream ? 'streaming' : 'non-streaming'} call failed: ${sample.status}`);
    }
  }

  const memoryAfterStart = memoryNow();
  const temporalRssAfterStart = await temporalRss();

  log('warming up both sides');
  for (const side of ['direct', 'gateway'] as const) {
    for (const stream of [false, true]) {
      await runLoad({ concurrency: 1, requests: plan.warmup, maxMs: plan.cellMaxMs }, call(side, stream));
      await runLoad({ concurrency: 16, requests: plan.warmup * 2, maxMs: plan.cellMaxMs }, call(side, stream));
    }
    await runLoad(
      { concurrency: plan.throughputClients, requests: plan.warmup * 2, maxMs: plan.cellMaxMs },
      call(side, false),
    );
  }

  const memoryBeforeLoad = memoryNow();
  const temporalRssBeforeLoad = await temporalRss();
  const peak = startMemoryPeak();

  const latencyRows: Record<'plain' | 'stream', Parameters<typeof latencyTable>[0]> = { plain: [], stream: [] };
  for (const stream of [false, true]) {
    for (const clients of [1, 16]) {
      const requests = plan.latencyRequests[clients]!;
      const options = { concurrency: clients, requests, maxMs: plan.cellMaxMs };
      log(`${stream ? 'streaming' : 'non-streaming'}, ${clients} client(s), ${requests} requests per side`);
      const pick = (sample: Sample) => (stream ? sample.firstTokenMs : sample.totalMs);
      const direct = summarize(await runLoad(options, call('direct', stream)), pick);
      const gateway = summarize(await runLoad(options, call('gateway', stream)), pick);
      latencyRows[stream ? 'stream' : 'plain'].push({ clients, gateway, direct, targeted: !stream && clients === 1 });
    }
  }

  // Metering (credit reservation before the call) and rate limiting (two shared windows), against the same
  // gateway path without them (the operator key), alternating cells so drift hits both alike.
  log(`metering and limiting: 1 client, ${plan.latencyRequests[1]} requests per side`);
  const meteringOptions = { concurrency: 1, requests: plan.latencyRequests[1]!, maxMs: plan.cellMaxMs };
  const unmetered = summarize(await runLoad(meteringOptions, call('unmetered', false)), (sample) => sample.totalMs);
  const metered = summarize(await runLoad(meteringOptions, call('gateway', false)), (sample) => sample.totalMs);

  const throughputRows: Parameters<typeof throughputTable>[0] = [];
  for (const side of ['direct', 'gateway'] as const) {
    log(`sustained load: ${side}, ${plan.throughputClients} clients, ${plan.throughputMs / 1000} s`);
    const meter = await startCpuMeter(testPlatform.databaseUrl, adminUrl);
    const result = await runLoad(
      { concurrency: plan.throughputClients, requests: Number.POSITIVE_INFINITY, maxMs: plan.throughputMs },
      call(side, false),
    );
    const cpu = await meter.stop();
    throughputRows.push({
      side,
      summary: summarize(result, (sample) => sample.totalMs),
      cpu,
      seconds: result.elapsedMs / 1000,
    });
  }
  throughputRows.reverse();

  const memoryPeak = peak.stop();
  const memoryAfterLoad = memoryNow();
  const temporalRssAfterLoad = await temporalRss();

  log(`spans: ${plan.spanRequests} sequential gateway requests`);
  const traces = await withSpans(async () => {
    const collected: Array<Record<string, number>> = [];
    const gateway = call('gateway', false);
    for (let i = 0; i < plan.spanRequests; i++) {
      const marks = beginTrace();
      marks['client.start'] = performance.now();
      const sample = await gateway();
      marks['client.end'] = performance.now();
      endTrace();
      if (sample.ok) collected.push(marks);
    }
    return collected;
  });
  log(`profiling the main thread: gateway, ${plan.throughputClients} clients, ${plan.profileMs / 1000} s`);
  const profiled = await profile(process.env.BENCH_PROFILE || undefined, () =>
    runLoad(
      { concurrency: plan.throughputClients, requests: Number.POSITIVE_INFINITY, maxMs: plan.profileMs },
      call('gateway', false),
    ),
  );
  const profiledCompletions = profiled.value.samples.length;
  const perCompletion = (rows: Array<{ name: string; ms: number }>) =>
    rows
      .slice(0, 15)
      .map(
        (row) =>
          `| ${row.name.replaceAll('|', '\\|')} | ${row.ms.toFixed(0)} | ${((row.ms / profiledCompletions) * 1000).toFixed(0)} |`,
      );
  const profileSection = [
    `Main JS thread only, ${profiledCompletions} completions in ${(profiled.summary.totalMs / 1000).toFixed(1)} s ` +
      `(sampling profiler on, so slower than the run above).`,
    '',
    '| package (self time) | ms | µs per completion |',
    '|---|---:|---:|',
    ...perCompletion(profiled.summary.byPackage),
    '',
    '| function (self time) | ms | µs per completion |',
    '|---|---:|---:|',
    ...perCompletion(profiled.summary.byFunction),
  ].join('\n');

  const baselines = await baselineRoundTrips(process.env.TEMPORAL_ADDRESS!, testPlatform.databaseUrl, 200);

  const plain1 = latencyRows.plain.find((row) => row.clients === 1)!;
  const gatewayRow = throughputRows.find((row) => row.side === 'gateway')!;
  const directRow = throughputRows.find((row) => row.side === 'direct')!;
  const cpu = cpus();
  const report = [
    '# Tessera gateway benchmark',
    '',
    `Environment: Node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model.trim() ?? 'unknown'}), ` +
      `${platform()} ${arch()}, ${new Date().toISOString()}` +
      `${quick ? ' — **QUICK run (BENCH_QUICK=1), a fifth of the load**' : ''}.`,
    '',
    `Setup: one process hosts the gateway API, its in-process Temporal worker, the provider simulator and the load ` +
      `clients; Temporal dev server (${process.env.TEMPORAL_ADDRESS}, in-memory SQLite) and PostgreSQL run beside ` +
      `it on the same cores. Model \`${model}\` → upstream \`${upstreamModel}\`; clients: \`node:http\` with one ` +
      `keep-alive agent for both sides; closed loop (each client sends its next request when its previous one ` +
      `finished); warm-up ${plan.warmup} + ${plan.warmup * 2} requests per side and mode. Latencies in ms.`,
    '',
    `**Targets**: added p50 < ${targets.addedP50Ms} ms and added p99 < ${targets.addedP99Ms} ms at one client; ` +
      `${targets.completionsPerSecond} durable completions/s. ` +
      `**Measured**: added p50 ${ms(plain1.gateway.p50 - plain1.direct.p50)} ms, added p99 ` +
      `${ms(plain1.gateway.p99 - plain1.direct.p99)} ms, ${gatewayRow.summary.perSecond.toFixed(1)} completions/s.`,
    '',
    '## Added latency, non-streaming (request to end of response)',
    '',
    latencyTable(latencyRows.plain),
    '',
    '## Added latency of metering and rate limiting (non-streaming, 1 client)',
    '',
    '| path | n | p50 | p99 |',
    '| --- | ---: | ---: | ---: |',
    `| operator key: no credits, no limits | ${unmetered.n} | ${ms(unmetered.p50)} | ${ms(unmetered.p99)} |`,
    `| customer key: reserve + settle credits, hour and day windows | ${metered.n} | ${ms(metered.p50)} | ${ms(metered.p99)} |`,
    `| **added by metering and limiting** | | **${ms(metered.p50 - unmetered.p50)}** | **${ms(metered.p99 - unmetered.p99)}** |`,
    '',
    '## Time to first token, streaming (request to first content-bearing `data:` event)',
    '',
    latencyTable(latencyRows.stream),
    '',
    `## Sustained completions, non-streaming, ${plan.throughputClients} clients, ${plan.throughputMs / 1000} s per side`,
    '',
    throughputTable(throughputRows),
    '',
    'CPU: seconds used during the run by this process (gateway, worker, simulator, clients), the Temporal dev ' +
      `server and the PostgreSQL backends of the bench database; ${cpu.length} core(s) give at most ` +
      `${(cpu.length * plan.throughputMs) / 1000} CPU s per run. The gateway run's CPU by thread:`,
    '',
    threadTable(gatewayRow.cpu, gatewayRow.summary.n),
    '',
    `For scale: in the direct run this process spent ${ms((directRow.cpu.bench * 1000) / directRow.summary.n)} ms of ` +
      'CPU per completion (clients + simulator), so nearly all of the CPU above is the gateway, its worker and Temporal.',
    '',
    '## Memory (this process: gateway + worker + simulator + clients)',
    '',
    memoryTable([
      { label: 'after start-up', memory: memoryAfterStart, temporalRssMiB: temporalRssAfterStart },
      { label: 'after warm-up, before load', memory: memoryBeforeLoad, temporalRssMiB: temporalRssBeforeLoad },
      { label: 'peak during load (200 ms samples)', memory: memoryPeak },
      { label: 'after load', memory: memoryAfterLoad, temporalRssMiB: temporalRssAfterLoad },
    ]),
    '',
    `## Where a gateway request's time goes (one client, ${traces.length} sequential requests, spans)`,
    '',
    stageTable(summarizeStages(traces)),
    '',
    'Baselines (sequential, 200 each):',
    '',
    stageTable([baselines.temporal, baselines.postgres]),
    '',
    '## Main-thread CPU profile under load (gateway, 32 clients)',
    '',
    profileSection,
    '',
    `Bench wall time: ${((Date.now() - startedAt) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');

  // Formatted like the rest of the repository, so `prettier --check .` accepts the committed results.
  const resultsFile = new URL('./results.md', import.meta.url);
  const formatted = await formatMarkdown(report, fileURLToPath(resultsFile));
  process.stdout.write(formatted);
  await writeFile(resultsFile, formatted);
  log('wrote bench/results.md');
} catch (error) {
  exitCode = 1;
  process.stderr.write(`[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
} finally {
  agent.destroy();
  await platformHandle?.close().catch((error: unknown) => log(`closing the platform failed: ${String(error)}`));
  if (setupDone) await globalTeardown().catch((error: unknown) => log(`teardown failed: ${String(error)}`));
}

// Everything is closed; should a stray handle still hold the loop, do not wait on it.
process.exitCode = exitCode;
setTimeout(() => {
  log('a handle kept the process alive after shutdown; exiting');
  process.exit(exitCode);
}, 5_000).unref();
