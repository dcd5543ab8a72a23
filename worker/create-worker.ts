/**
 * Builds the worker's dependencies and the Temporal worker itself; used by the background worker process
 * and by the API process, whose in-process worker takes eagerly started completions.
 */
import type { NativeConnection } from '@temporalio/worker';
import {
  DefaultLogger,
  Runtime,
  Worker,
  bundleWorkflowCode,
  type LogLevel,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createActivities } from '../activities/index.ts';
import { AccountPlans } from '../activities/credits/accounts.ts';
import { CreditLedger } from '../activities/credits/credit-ledger.ts';
import type { PlansFile } from '../common/plans.ts';
import { ProviderCalls, type ProviderCallDependencies } from '../activities/provider-calls.ts';
import { CircuitBreaker } from '../activities/routing/circuit-breaker.ts';
import { StreamHub } from '../activities/streaming/stream-hub.ts';
import { StreamJournal } from '../activities/streaming/stream-journal.ts';
import type { LoadedCatalogue } from '../config/load-catalogue.ts';
import type { Settings } from '../config/settings.ts';

const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
let bundle: Promise<WorkflowBundleWithSourceMap> | null = null;
let runtimeInstalled = false;

/** Installs the Temporal runtime once per process, logging at TEMPORAL_LOG_LEVEL (default WARN). */
export function installTemporalRuntime(level = (process.env.TEMPORAL_LOG_LEVEL ?? 'WARN') as LogLevel): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // No SDK signal handlers: the process drains in its own order (HTTP first, then the worker).
    Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
  } catch {
    // Already installed by someone else in this process (e.g. a test harness): keep theirs.
  }
}

/** The workflow bundle, built once per process (webpack through the SDK's bundler). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
  return bundle;
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export interface WorkerDependencies {
  hub: StreamHub;
  journal: StreamJournal;
  breaker: CircuitBreaker;
  calls: ProviderCalls;
  ledger: CreditLedger;
  accounts: AccountPlans;
  plans: PlansFile;
}

export function createWorkerDependencies(
  orm: MikroORM,
  settings: Settings,
  catalogue: LoadedCatalogue,
  plans: PlansFile,
  observe?: ProviderCallDependencies['observe'],
): WorkerDependencies {
  const hub = new StreamHub();
  const ledger = new CreditLedger(orm);
  const accounts = new AccountPlans(orm, ledger, plans);
  const journal = new StreamJournal(orm);
  const breaker = new CircuitBreaker(orm, {
    failureThreshold: settings.BREAKER_FAILURE_THRESHOLD,
    cooldownMs: settings.BREAKER_COOLDOWN_MS,
    probeTimeoutMs: settings.BREAKER_PROBE_TIMEOUT_MS,
    snapshotTtlMs: settings.BREAKER_SNAPSHOT_TTL_MS,
  });
  const calls = new ProviderCalls({
    catalogue,
    breaker,
    hub,
    journal,
    providerTimeouts: {
      connectTimeoutMs: settings.PROVIDER_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: settings.PROVIDER_IDLE_TIMEOUT_MS,
      requestTimeoutMs: settings.PROVIDER_REQUEST_TIMEOUT_MS,
    },
    ledger,
    observe,
  });
  return { hub, journal, breaker, calls, ledger, accounts, plans };
}

export async function createWorker(options: {
  orm: MikroORM;
  connection: NativeConnection;
  settings: Settings;
  catalogue: LoadedCatalogue;
  dependencies: WorkerDependencies;
}): Promise<Worker> {
  const { settings } = options;
  return Worker.create({
    connection: options.connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities({ orm: options.orm, ...options.dependencies }),
    maxConcurrentWorkflowTaskExecutions: 200,
    maxConcurrentLocalActivityExecutions: 400,
    maxCachedWorkflows: 1000,
    shutdownGraceTime: `${settings.SHUTDOWN_GRACE_MS}ms`,
  });
}

/** Stops a worker that may already be stopping; resolves when its run() has ended. */
export async function stopWorker(worker: Worker, running: Promise<void>): Promise<void> {
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
}
