/**
 * `npm run cluster`: the production shape on one machine, from the same code. What `docker compose` and a real
 * deployment run, with more than one of each process:
 *
 * - one PostgreSQL (DATABASE_URL, default the machine's server at 127.0.0.1:5432, database `tessera_cluster`),
 *   migrated once (db/orm.ts migrate) before any API process starts;
 * - a Temporal server whose persistence and visibility are databases on that PostgreSQL (`<database>_temporal`,
 *   `<database>_temporal_visibility`; scripts/lib/temporal-postgres.ts), its frontend on `--temporal-port`;
 * - `--apis` API processes (api/server.ts, each the gateway and the agent service with its in-process worker), API n
 *   on ports `--port` + 2(n-1) (gateway) and the next one (agent service);
 * - `--workers` background worker processes (worker/main.ts);
 * - the provider simulator when no provider key is set, as `npm start` does.
 *
 * Each API process, worker and the Temporal server is supervised (scripts/lib/supervisor.ts): restarted with backoff
 * when it exits unasked. Each writes its log under `<data-dir>/logs` (api-1.log, worker-1.log, temporal.log); this
 * process's own lines (starts, restarts) go to its output. SIGTERM or Ctrl-C drains the API processes and workers,
 * then stops the simulator and the Temporal server.
 */
import { mkdirSync } from 'node:fs';
import { bindable } from './lib/processes.ts';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadCatalogue } from '../config/load-catalogue.ts';
import { readSettings } from '../config/settings.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { stopOnSignals } from '../process/signals.ts';
import { version } from '../process/version.ts';
import { startSimulator } from '../simulator/server.ts';
import { dataDirectory } from './lib/data-dir.ts';
import { ensureDatabase, redact } from './lib/database.ts';
import { databaseNameOf } from '../db/databases.ts';
import { generatedSecrets, localDirectories, sharedWorkflowBundle, simulateProviders } from './lib/local-state.ts';
import { nodeProgram, supervise, type SupervisedPart } from './lib/supervisor.ts';
import { startTemporalOnPostgres } from './lib/temporal-postgres.ts';
import { ensureWebBuild } from './lib/web-build.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => process.stdout.write(`[cluster] ${line}\n`);
const usage = `Usage: npm run cluster -- [--apis N] [--workers N] [--port P] [--temporal-port P] [--data-dir DIR]
                          [--database-url URL]

  --apis N            API processes (default 2); API n serves the gateway on P + 2(n-1), the agent service on the next
  --workers N         background worker processes (default 2)
  --port P            the first API process's gateway port (default PORT, else 8080)
  --temporal-port P   the Temporal server's frontend (default 7233); its other services take the next 8 ports
  --data-dir DIR      logs, the Temporal server's config, media, sandboxes, keys (default <TESSERA_DATA_DIR>/cluster)
  --database-url URL  the PostgreSQL database (default DATABASE_URL, else postgres://postgres@127.0.0.1:5432/tessera_cluster)
`;

// A flag it does not know (or one without its value) ends it with the usage.
const flags = (() => {
  try {
    return parseArgs({
      options: {
        apis: { type: 'string' },
        workers: { type: 'string' },
        port: { type: 'string' },
        'temporal-port': { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${usage}`);
    process.exit(2);
  }
})();
if (flags.help) {
  process.stdout.write(usage);
  process.exit(0);
}

function count(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  const parsed = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
    process.stderr.write(`--${name} must be an integer from ${min} to ${max}, not ${value}\n\n${usage}`);
    process.exit(2);
  }
  return parsed;
}
const apis = count('apis', flags.apis, 2, 1, 32);
const workers = count('workers', flags.workers, 2, 0, 32);
const basePort = count('port', flags.port ?? process.env.PORT?.trim(), 8080, 1, 65_535 - 2 * apis);
const temporalPort = count('temporal-port', flags['temporal-port'], 7233, 1, 65_535 - 8);
const dataDir = resolve(flags['data-dir'] ?? join(dataDirectory(), 'cluster'));
const logDir = join(dataDir, 'logs');
mkdirSync(logDir, { recursive: true });
const databaseUrl =
  flags['database-url'] ?? (process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/tessera_cluster');
const databaseName = databaseNameOf(databaseUrl);
if (!databaseName) {
  process.stderr.write(`the database URL must name a database (${redact(databaseUrl)})\n`);
  process.exit(2);
}

const environment: Record<string, string | undefined> = { ...process.env, DATABASE_URL: databaseUrl };
localDirectories(environment, dataDir);
const namespace = environment.TEMPORAL_NAMESPACE?.trim() || 'default';
const settings = readSettings({ ...environment, PORT: String(basePort) });
const host = settings.HOST === '0.0.0.0' ? '127.0.0.1' : settings.HOST;
// With no provider key at all, every provider is played by the simulator, as under `npm start`.
const simulate = loadCatalogue(environment).endpoints.size === 0;
const simulatorPort = Number(environment.SIMULATOR_PORT ?? 4010);
const apiPorts = Array.from({ length: apis }, (_, index) => ({
  gateway: basePort + 2 * index,
  agents: basePort + 2 * index + 1,
}));

// Ports first, so a clash (an `npm start` on 8080 or 7233, an earlier cluster still running) is said at once.
const taken: string[] = [];
for (const [index, ports] of apiPorts.entries()) {
  for (const port of [ports.gateway, ports.agents]) {
    if (!(await bindable(port, settings.HOST))) taken.push(`${port} (API ${index + 1})`);
  }
}
for (let port = temporalPort; port <= temporalPort + 8; port++) {
  if (!(await bindable(port, '127.0.0.1'))) taken.push(`${port} (Temporal server)`);
}
if (simulate && !(await bindable(simulatorPort, '127.0.0.1'))) {
  taken.push(`${simulatorPort} (the provider simulator: SIMULATOR_PORT)`);
}
if (taken.length) {
  process.stderr.write(
    `ports already in use: ${taken.join(', ')}. Stop what listens there, or choose others with --port, ` +
      `--temporal-port and SIMULATOR_PORT.\n`,
  );
  process.exit(1);
}

// What was started, stopped in reverse if a first start fails (the API processes and workers also stop by
// themselves once this process is gone: TESSERA_SUPERVISED).
const parts: SupervisedPart[] = [];
let simulator: Awaited<ReturnType<typeof startSimulator>> | null = null;
// The Temporal server stops last, once the API processes and workers have drained; but its supervision ends at once,
// so a server that a terminal's Ctrl-C (SIGINT to the whole process group) ended first is not started again.
let othersStopped: Promise<unknown> = Promise.resolve();
const stopAll = async () => {
  const [temporal, ...rest] = parts;
  othersStopped = Promise.all(rest.map((part) => part.stop())).then(() => simulator?.close());
  await Promise.all([othersStopped, temporal?.stop()]);
};

try {
  // The database (created when missing, pgvector made available) and its migrations, the Temporal server (its two
  // databases migrated by its own tool) and the workflow bundle, side by side.
  const temporalDatabases = {
    persistence: `${databaseName}_temporal`,
    visibility: `${databaseName}_temporal_visibility`,
  };
  const database = (async () => {
    const previous = process.env.DATABASE_URL;
    process.env.DATABASE_URL = databaseUrl;
    try {
      await ensureDatabase({ dataDir, log });
    } finally {
      if (previous === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = previous;
    }
    const orm = await openOrm(databaseUrl, { poolMax: 1 });
    try {
      const applied = await migrate(orm);
      log(applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
    } finally {
      await orm.close();
    }
  })();
  let temporalServer: { kill(signal: NodeJS.Signals): boolean } | undefined;
  // A last resort should this process end without stopping it (a Go server notices a closed pipe only when it writes).
  process.on('exit', () => temporalServer?.kill('SIGKILL'));
  const temporal = supervise({
    name: 'the Temporal server',
    log,
    start: async () => {
      const server = await startTemporalOnPostgres({
        databaseUrl,
        port: temporalPort,
        dataDir: join(dataDir, 'temporal'),
        databases: temporalDatabases,
        namespace,
        log,
        logFile: join(logDir, 'temporal.log'),
      });
      temporalServer = server.process;
      return {
        exited: server.exited,
        stop: async () => {
          await othersStopped.catch(() => undefined);
          await server.stop();
        },
      };
    },
  });
  const bundle = sharedWorkflowBundle(environment, dataDir, log);
  const [temporalStart, ...others] = await Promise.allSettled([temporal, database, bundle]);
  if (temporalStart.status === 'fulfilled') parts.push(temporalStart.value);
  for (const outcome of [temporalStart, ...others]) if (outcome.status === 'rejected') throw outcome.reason;
  environment.TEMPORAL_ADDRESS = `127.0.0.1:${temporalPort}`;
  environment.TEMPORAL_NAMESPACE = namespace;

  if (simulate) {
    simulator = await startSimulator({ port: simulatorPort });
    simulateProviders(environment, simulator.url);
  }
  generatedSecrets(environment, dataDir);
  await ensureWebBuild(log);

  const startApi = (index: number) => {
    const ports = apiPorts[index]!;
    const services = readSettings({ ...environment, PORT: String(ports.gateway) }).API_SERVICES;
    const urls = [
      ...(services.includes('gateway') ? [`http://${host}:${ports.gateway}`] : []),
      ...(services.includes('agents') ? [`http://${host}:${ports.agents}`] : []),
    ];
    return supervise({
      name: `API ${index + 1}`,
      log,
      start: nodeProgram({
        script: `${root}api/server.ts`,
        env: { ...environment, PORT: String(ports.gateway), AGENT_PORT: String(ports.agents) },
        readyUrls: urls.map((url) => `${url}/health/live`),
        logFile: join(logDir, `api-${index + 1}.log`),
        stopGraceMs: settings.SHUTDOWN_GRACE_MS + 30_000,
      }),
    });
  };
  const startWorker = (index: number) =>
    supervise({
      name: `worker ${index + 1}`,
      log,
      start: nodeProgram({
        script: `${root}worker/main.ts`,
        env: environment,
        logFile: join(logDir, `worker-${index + 1}.log`),
      }),
    });
  // The first API process alone (it creates the platform's schedules), then the others and the workers together.
  log(`starting API 1 of ${apis}`);
  parts.push(await startApi(0));
  log(`starting ${apis - 1} more API process(es) and ${workers} worker(s)`);
  const rest = await Promise.allSettled([
    ...Array.from({ length: apis - 1 }, (_, index) => startApi(index + 1)),
    ...Array.from({ length: workers }, (_, index) => startWorker(index)),
  ]);
  for (const outcome of rest) if (outcome.status === 'fulfilled') parts.push(outcome.value);
  const failed = rest.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
} catch (error) {
  log(`could not start: ${error instanceof Error ? error.message : String(error)}`);
  await stopAll();
  process.exit(1);
}

const providers = loadCatalogue(environment).catalogue.providers.filter((provider) => provider.enabled);
const services = settings.API_SERVICES;
const logs = [
  ...apiPorts.map((_, index) => `api-${index + 1}.log`),
  ...Array.from({ length: workers }, (_, index) => `worker-${index + 1}.log`),
  'temporal.log',
];
const banner = [
  '',
  `  Tessera ${version} is running in the production shape: ${apis} API process(es), ${workers} worker(s)`,
  ...apiPorts.map((ports, index) => {
    const gateway = `http://${host}:${ports.gateway}`;
    const agents = `http://${host}:${ports.agents}`;
    return (
      `  API ${String(index + 1).padEnd(15)}` +
      [
        services.includes('gateway') ? `gateway ${gateway} (OpenAI SDK base URL: ${gateway}/v1)` : 'gateway off',
        services.includes('agents') ? `agent service ${agents}` : 'agent service off (API_SERVICES)',
      ].join(', ')
    );
  }),
  `  Workers            ${workers} background worker process(es) on task queue ${settings.TEMPORAL_TASK_QUEUE}`,
  `  Temporal server    ${environment.TEMPORAL_ADDRESS} (namespace ${namespace}; persistence and visibility in ` +
    `PostgreSQL: ${databaseName}_temporal, ${databaseName}_temporal_visibility; no Web UI: ` +
    `temporal workflow list --address ${environment.TEMPORAL_ADDRESS})`,
  `  Database           ${redact(databaseUrl)}`,
  simulator
    ? `  Providers          SIMULATOR at ${simulator.url}: no provider API key is set, so every provider is simulated`
    : `  Providers          ${providers.map((provider) => provider.id).join(', ')}`,
  `  Logs               ${logDir}: ${logs.join(', ')}`,
  `  Media, sandboxes   ${environment.MEDIA_DIR}, ${environment.SANDBOX_DIR} (shared by every process)`,
  `  Master key         ${environment.MASTER_KEY}${process.env.MASTER_KEY ? '' : `   (generated, kept in ${dataDir}/master-key)`}`,
  '',
  `  Try: curl -s http://${host}:${apiPorts[apiPorts.length - 1]!.gateway}/v1/chat/completions -H "Authorization: Bearer $MASTER_KEY" \\`,
  `         -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}'`,
  '',
];
process.stdout.write(banner.join('\n') + '\n');

stopOnSignals(async () => {
  log('draining the API processes and workers, then stopping the Temporal server');
  await stopAll();
  log('stopped');
});

/** A key generated once into the data directory (as `npm start` does under .data/). */
