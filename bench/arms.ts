/**
 * The bench's arms, each a real process tree on loopback: the upstream (the provider simulator, an
 * OpenAI-compatible server), Portkey's open-source gateway, and Tessera in two shapes: `npm start` as shipped, and
 * the production shape (`npm run api` + `npm run worker` on a Temporal server backed by PostgreSQL).
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { simulatorControl } from '../simulator/server.ts';
import { processTree, startChild, waitForHttp, type Child, type ProcessInfo } from '../scripts/lib/processes.ts';

export const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
const nodeBinary = process.execPath;

export interface Upstream {
  url: string;
  child: Child;
  /** Sets how long the upstream waits before answering (before the first token, when streaming). */
  setLatency(ms: number): Promise<void>;
}

export async function startUpstream(port: number, logDir: string): Promise<Upstream> {
  const logFile = join(logDir, 'upstream.log');
  const child = startChild({
    name: 'upstream (provider simulator)',
    command: nodeBinary,
    args: [join(repositoryRoot, 'scripts/simulator.ts')],
    env: { ...process.env, SIMULATOR_PORT: String(port), SIMULATOR_HOST: '127.0.0.1' },
    logFile,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/_simulator/requests`, child, 30_000);
  const control = simulatorControl(url);
  return {
    url,
    child,
    async setLatency(ms) {
      await control.clearFaults();
      if (ms > 0) await control.addFault({ fault: { latency_ms: ms } });
    },
  };
}

/** Portkey's gateway (`@portkey-ai/gateway`, pinned in devDependencies), as `npx @portkey-ai/gateway` runs it. */
export async function startPortkey(port: number, logDir: string): Promise<Child> {
  const logFile = join(logDir, 'portkey.log');
  const child = startChild({
    name: 'Portkey gateway',
    command: nodeBinary,
    args: [join(repositoryRoot, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${port}`],
    env: { ...process.env, NODE_ENV: 'production' },
    logFile,
  });
  // Portkey answers GET / with a greeting once it listens.
  await waitForHttp(`http://127.0.0.1:${port}/`, child, 30_000);
  return child;
}

export interface Platform {
  url: string;
  /** The agent service (AGENT_PORT: the gateway's port + 100 here). */
  agentsUrl: string;
  masterKey: string;
  /** The processes whose CPU and writes are the platform's (re-listed at every measurement). */
  children: Child[];
  stop(): Promise<void>;
}

/**
 * What both shapes of Tessera start with: the gateway on `port` and the agent service beside it (+100), on loopback,
 * Temporal at `temporalAddress`, and the OpenAI provider pointed at the upstream (the only provider with a key).
 */
function platformEnvironment(options: {
  port: number;
  temporalAddress: string;
  upstreamUrl: string;
  masterKey: string;
}): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    OPENAI_API_KEY: 'bench',
    OPENAI_BASE_URL: `${options.upstreamUrl}/v1`,
    PORT: String(options.port),
    AGENT_PORT: String(options.port + 100),
    HOST: '127.0.0.1',
    TEMPORAL_ADDRESS: options.temporalAddress,
    MASTER_KEY: options.masterKey,
  };
}

/** Tessera as shipped: `npm start` in its own process tree, with its own data directory and ports. */
export async function startShipped(options: {
  port: number;
  temporalPort: number;
  postgresPort: number;
  dataDir: string;
  upstreamUrl: string;
  masterKey: string;
  logDir: string;
  /** Settings that differ from the shipped defaults (each bench says which and why). */
  environment?: Record<string, string>;
}): Promise<Platform> {
  await rm(options.dataDir, { recursive: true, force: true });
  const logFile = join(options.logDir, 'npm-start.log');
  const child = startChild({
    name: 'npm start',
    command: 'npm',
    args: ['start'],
    cwd: repositoryRoot,
    env: {
      ...platformEnvironment({ ...options, temporalAddress: `127.0.0.1:${options.temporalPort}` }),
      TESSERA_DATA_DIR: options.dataDir,
      TEMPORAL_UI_PORT: String(options.temporalPort + 1000),
      EMBEDDED_POSTGRES_PORT: String(options.postgresPort),
      // Profiling runs pass e.g. --cpu-prof to every Node process of the platform.
      ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
      ...options.environment,
    },
    logFile,
  });
  const url = `http://127.0.0.1:${options.port}`;
  await waitForHttp(`${url}/health`, child, 300_000);
  const agentsUrl = `http://127.0.0.1:${options.port + 100}`;
  await waitForHttp(`${agentsUrl}/health`, child, 30_000);
  return { url, agentsUrl, masterKey: options.masterKey, children: [child], stop: () => child.stop(60_000) };
}

/** Every process of a platform started by `startShipped` (its `npm start` tree), listed anew at each call. */
export async function shippedProcesses(platform: Platform): Promise<ProcessInfo[]> {
  return processTree(platform.children[0]!.process.pid!);
}

/**
 * The production shape: the API and the worker as separate processes (`npm run api`, `npm run worker`) on a
 * PostgreSQL server, against a Temporal server whose persistence is that PostgreSQL (see temporal-postgres.ts).
 */
export async function startProduction(options: {
  port: number;
  temporalAddress: string;
  databaseUrl: string;
  upstreamUrl: string;
  masterKey: string;
  logDir: string;
}): Promise<Platform> {
  const environment = { ...platformEnvironment(options), DATABASE_URL: options.databaseUrl };
  const npmRun = (script: string) =>
    startChild({
      name: `npm run ${script}`,
      command: 'npm',
      args: ['run', script],
      cwd: repositoryRoot,
      env: environment,
      logFile: join(options.logDir, `${script}.log`),
    });
  const migration = npmRun('migrate');
  if ((await migration.exited) !== 0) throw new Error(`npm run migrate failed:\n${migration.output()}`);
  const api = npmRun('api');
  const worker = npmRun('worker');
  const url = `http://127.0.0.1:${options.port}`;
  await waitForHttp(`${url}/health`, api, 120_000);
  return {
    url,
    agentsUrl: `http://127.0.0.1:${options.port + 100}`,
    masterKey: options.masterKey,
    children: [api, worker],
    stop: async () => {
      await Promise.all([api.stop(60_000), worker.stop(60_000)]);
    },
  };
}

/** A business account's key, metered and rate limited (limits far above the load, so both windows count). */
export async function createBenchKey(platform: Platform): Promise<string> {
  return (await createBenchAccount(platform)).key;
}

/** createBenchKey's account with its user id (for a bench that also reads or writes the account's rows). */
export async function createBenchAccount(platform: Platform): Promise<{ key: string; userId: string }> {
  const call = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${platform.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${platform.masterKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const created = await call('POST', '/api/v1/apikeys', {
    // Unique even for accounts made in the same millisecond (one account per address).
    email: `bench-${Date.now()}-${randomBytes(3).toString('hex')}@example.com`,
    plan: 'business',
  });
  await call('PATCH', `/api/v1/account/${String(created.user_id)}`, {
    custom_limits: { per_hour: 100_000_000, per_day: 100_000_000 },
  });
  return { key: String(created.key), userId: String(created.user_id) };
}
