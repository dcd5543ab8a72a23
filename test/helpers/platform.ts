/**
 * A whole gateway for one test file: its own database, its own simulator, its own task queue, on the
 * run's Temporal server; clients are the official `openai` SDK and plain fetch.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { platformScheduleIds } from '../../worker/schedules.ts';
import { startGateway, type RunningGateway } from '../../api/server.ts';
import { simulatorControl, startSimulator } from '../../simulator/server.ts';
import { cloneTestDatabase } from './databases.ts';
import { simulatedProviders, simulatedToolServices } from '../../scripts/lib/simulated-providers.ts';

export interface TestPlatform {
  gateway: RunningGateway;
  simulatorUrl: string;
  simulator: ReturnType<typeof simulatorControl>;
  masterKey: string;
  databaseUrl: string;
  /** The environment the gateway was started with: start a second replica from it. */
  environment: Record<string, string | undefined>;
  /** Creates a user (by e-mail, on `plan`: default business, all models and roomy limits) and an API key for it. */
  createKey(email?: string, plan?: string): Promise<{ id: string; key: string; user_id: string }>;
  openai(apiKey: string, options?: { maxRetries?: number }): OpenAI;
  fetch(path: string, init?: RequestInit & { key?: string }): Promise<Response>;
  /** The agent service's URL (the same process serves both). */
  agentsUrl: string;
  /** A request to the agent service; `key` sends it as `Authorization: Bearer`, `cookie` as the Cookie header. */
  agents(path: string, init?: RequestInit & { key?: string; cookie?: string }): Promise<Response>;
  close(): Promise<void>;
}

export async function startTestPlatform(
  overrides: Record<string, string> | ((simulatorUrl: string, databaseUrl: string) => Record<string, string>) = {},
): Promise<TestPlatform> {
  const database = await cloneTestDatabase();
  const simulator = await startSimulator();
  const masterKey = `te_master_${randomBytes(16).toString('hex')}`;
  const environment: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    LOG_LEVEL: 'warn',
    PORT: '0',
    AGENT_PORT: '0',
    // The agent service's per-IP limit is tested on its own (test/api/agents-limits.test.ts): off elsewhere.
    AGENT_IP_LIMIT_PER_MINUTE: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    TEMPORAL_TASK_QUEUE: `test-${randomBytes(6).toString('hex')}`,
    MASTER_KEY: masterKey,
    SHUTDOWN_GRACE_MS: '5000',
    // Dozens of test platforms start in a run and few run Python: it loads at its first call
    // (docs/session-chat-and-tools.md, "Built-in tools").
    ENGINES_WARM_AT_START: 'calculator,javascript',
    // Every answer of both services is checked against their OpenAPI documents (api/openapi/response-check.ts).
    OPENAPI_RESPONSE_CHECK: 'true',
    ...simulatedProviders(simulator.url),
    ...simulatedToolServices(simulator.url, {}),
    ...(typeof overrides === 'function' ? overrides(simulator.url, database.url) : overrides),
  };
  const gateway = await startGateway(environment);
  const control = simulatorControl(simulator.url);
  let counter = 0;
  const fetchGateway: TestPlatform['fetch'] = (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    if (init.body && !(init.body instanceof FormData) && !headers.has('content-type'))
      headers.set('content-type', 'application/json');
    return fetch(`${gateway.url}${path}`, { ...init, headers });
  };
  const agentsUrl = gateway.agents?.url ?? '';
  const fetchAgents: TestPlatform['agents'] = (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    if (init.cookie) headers.set('cookie', init.cookie);
    if (init.body && !(init.body instanceof FormData) && !headers.has('content-type'))
      headers.set('content-type', 'application/json');
    // A browser sends its own origin with every POST; the CSRF check wants it for cookie-authenticated writes.
    if (init.cookie && !headers.has('origin')) headers.set('origin', agentsUrl);
    return fetch(`${agentsUrl}${path}`, { ...init, headers, redirect: init.redirect ?? 'manual' });
  };
  return {
    gateway,
    agentsUrl,
    agents: fetchAgents,
    simulatorUrl: simulator.url,
    simulator: control,
    masterKey,
    databaseUrl: database.url,
    environment,
    async createKey(email = `user${++counter}-${randomBytes(3).toString('hex')}@example.com`, plan = 'business') {
      const response = await fetchGateway('/api/v1/apikeys', {
        method: 'POST',
        key: masterKey,
        body: JSON.stringify({ email, plan }),
      });
      if (response.status !== 201)
        throw new Error(`creating a key failed: ${response.status} ${await response.text()}`);
      return (await response.json()) as { id: string; key: string; user_id: string };
    },
    openai: (apiKey, options = {}) =>
      new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: options.maxRetries ?? 0 }),
    fetch: fetchGateway,
    async close() {
      await gateway.close();
      await simulator.close();
      await database.drop();
      await removeSchedules(environment);
    },
  };
}

/**
 * A second API process on the platform's database and Temporal server: its own task queue (so its own in-process
 * worker), pools and limiter instances, as another replica of the deployment would have; `overrides` change its
 * settings. The caller closes it.
 */
export function startReplica(platform: TestPlatform, overrides: Record<string, string> = {}): Promise<RunningGateway> {
  return startGateway({
    ...platform.environment,
    TEMPORAL_TASK_QUEUE: `${platform.environment.TEMPORAL_TASK_QUEUE}-replica`,
    ...overrides,
  });
}

/**
 * Deletes the platform's own Temporal schedules: the run's dev server outlives every test file, and a schedule whose
 * task queue no worker serves any more would start a workflow nobody runs, every minute, for the rest of the run.
 */
async function removeSchedules(environment: Record<string, string | undefined>): Promise<void> {
  const connection = await Connection.connect({ address: environment.TEMPORAL_ADDRESS! });
  try {
    const client = new Client({ connection });
    for (const scheduleId of platformScheduleIds(environment.TEMPORAL_TASK_QUEUE!)) {
      await client.schedule
        .getHandle(scheduleId)
        .delete()
        .catch((error: unknown) => {
          if (!(error instanceof ScheduleNotFoundError)) throw error;
        });
    }
  } finally {
    await connection.close();
  }
}
