/**
 * The whole platform as `npm start` runs it (scripts/start.ts: Temporal dev server, embedded PostgreSQL, API with
 * its worker, background worker), in a process group of its own, for tests that stop or crash all of it at once.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePorts, isRunning, processTree, startChild, waitForHttp } from '../../scripts/lib/processes.ts';
import { workflowReport } from './wait.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface PlatformProcess {
  pid: number;
  /** The last lines the platform printed (every process of it shares this output). */
  output(lines?: number): string;
  /** Resolves once `url` answers 2xx; throws with the output's tail if the platform exits or time runs out. */
  waitForHttp(url: string, timeoutMs: number): Promise<void>;
  /**
   * SIGKILL, all at once, to every process of the platform: its group, and every descendant (PostgreSQL's
   * backends run in sessions of their own). Resolves once none of them is left.
   */
  kill(): Promise<number[]>;
  /** SIGTERM (the platform drains), then SIGKILL to whatever is left after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** `node scripts/start.ts` (what `npm start` runs) with exactly `environment`, in its own process group. */
export function startPlatformProcess(environment: Record<string, string | undefined>): PlatformProcess {
  const child = startChild({
    name: 'the platform',
    command: process.execPath,
    args: [`${root}scripts/start.ts`],
    cwd: root,
    env: environment,
  });
  const pid = child.process.pid;
  if (pid === undefined) throw new Error('could not spawn scripts/start.ts');
  return {
    pid,
    output: child.output,
    waitForHttp: (url, timeoutMs) => waitForHttp(url, child, timeoutMs),
    async kill() {
      const tree = (await processTree(pid)).map((info) => info.pid);
      child.signalGroup('SIGKILL');
      for (const member of tree) {
        try {
          process.kill(member, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await child.exited;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const alive = (await Promise.all(tree.map(async (member) => ((await isRunning(member)) ? member : 0)))).filter(
          Boolean,
        );
        if (alive.length === 0) return tree;
        if (Date.now() > deadline) throw new Error(`processes ${alive.join(', ')} outlived SIGKILL`);
        await sleep(50);
      }
    },
    stop: (graceMs = 30_000) => child.stop(graceMs),
  };
}

export interface PlatformSetup {
  dataDir: string;
  environment: Record<string, string | undefined>;
  apiUrl: string;
  agentsUrl: string;
  databaseUrl: string;
  temporalAddress: string;
}

/**
 * A data directory under .data/ and free ports for one `npm start` of a test (name: the directory's prefix), with
 * OpenAI, pointed at the simulator, as the only provider; `extra` adds to the environment.
 */
export async function platformSetup(
  name: string,
  simulatorUrl: string,
  extra: Record<string, string> = {},
): Promise<PlatformSetup> {
  await mkdir(`${root}.data`, { recursive: true });
  const dataDir = await mkdtemp(`${root}.data/${name}-`);
  // As root, the embedded PostgreSQL runs as an unprivileged user, which must be able to enter the directory.
  await chmod(dataDir, 0o755);
  const [port, temporalPort, uiPort, postgresPort, agentPort] = (await freePorts(5)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  return {
    dataDir,
    apiUrl: `http://127.0.0.1:${port}`,
    agentsUrl: `http://127.0.0.1:${agentPort}`,
    databaseUrl: `postgres://postgres:postgres@127.0.0.1:${postgresPort}/tessera`,
    temporalAddress,
    environment: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TESSERA_DATA_DIR: dataDir,
      PORT: String(port),
      AGENT_PORT: String(agentPort),
      HOST: '127.0.0.1',
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_UI_PORT: String(uiPort),
      EMBEDDED_POSTGRES_PORT: String(postgresPort),
      MASTER_KEY: `te_${randomBytes(24).toString('base64url')}`,
      OPENAI_API_KEY: 'x',
      OPENAI_BASE_URL: `${simulatorUrl}/v1`,
      ...extra,
    },
  };
}

/** One statement on a connection of its own (the platform's PostgreSQL may have just been killed or restarted). */
export async function sqlOnce<Row>(databaseUrl: string, text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A business-plan user with a key, made with the operator key of a platform started from `setup`. */
export async function createBusinessKey(setup: PlatformSetup, label: string): Promise<{ key: string; userId: string }> {
  const created = await fetch(`${setup.apiUrl}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${setup.environment.MASTER_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `${label}-${randomBytes(4).toString('hex')}@example.com`, plan: 'business' }),
  });
  if (created.status !== 201) throw new Error(`creating a key answered ${created.status}: ${await created.text()}`);
  const { key, user_id: userId } = (await created.json()) as { key: string; user_id: string };
  return { key, userId };
}

/** After a platform test: the platform's output when it failed, then the platform, its simulator and its data go. */
export async function tearDownPlatform(options: {
  platform: PlatformProcess | undefined;
  simulator: { close(): Promise<void> } | undefined;
  /** Its data directory goes; on a failure its Temporal's workflows are listed (what was pending, and why). */
  setup: Pick<PlatformSetup, 'dataDir' | 'temporalAddress'> | undefined;
  passed: boolean;
  log: (line: string) => void;
}): Promise<void> {
  if (!options.passed && options.platform) {
    options.log(`platform output (last lines):\n${options.platform.output(120)}`);
    if (options.setup) {
      const report = await workflowReport(options.setup.temporalAddress).catch((error: unknown) => String(error));
      options.log(`workflows:\n${report}`);
    }
  }
  await options.platform?.stop(20_000);
  await options.simulator?.close();
  if (options.setup) await rm(options.setup.dataDir, { recursive: true, force: true, maxRetries: 5 });
}
