/**
 * The gateway process: Koa API plus an in-process worker on the completions task queue sharing one
 * NativeConnection with the client, so completions start eagerly in this process. `npm run api`.
 * SIGTERM drains: stop accepting, let open streams finish (up to SHUTDOWN_GRACE_MS), stop the worker.
 */
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Server } from 'node:http';
import { loadCatalogue } from '../config/load-catalogue.ts';
import { loadPlans } from '../config/load-plans.ts';
import { readSettings } from '../config/settings.ts';
import { openOrm } from '../db/orm.ts';
import { createWorker, createWorkerDependencies, installTemporalRuntime, stopWorker } from '../worker/create-worker.ts';
import { createApp } from './app.ts';
import { createLogger } from '../process/logger.ts';
import { stopOnSignals } from '../process/signals.ts';
import { version } from '../process/version.ts';
import { ensureCreditRenewalSchedule } from '../worker/schedules.ts';
import { Metrics } from './observability.ts';
import { PrincipalCache } from './principal-cache.ts';
import { RateLimits } from './rate-limit.ts';
import { OpenStreams } from './routes/completions/routes.ts';

export interface RunningGateway {
  url: string;
  port: number;
  /** Drains and stops everything this process started. */
  close(): Promise<void>;
}

export async function startGateway(
  environment: Record<string, string | undefined> = process.env,
): Promise<RunningGateway> {
  const settings = readSettings(environment);
  const logger = createLogger('gateway');
  const catalogue = loadCatalogue(environment);
  const orm = await openOrm(settings.DATABASE_URL);
  installTemporalRuntime();
  const connection = await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace: settings.TEMPORAL_NAMESPACE });
  const metrics = new Metrics({ defaultMetrics: true });
  const dependencies = createWorkerDependencies(orm, settings, catalogue, loadPlans(environment), (provider, outcome) =>
    metrics.recordAttempt(provider, outcome),
  );
  const worker = await createWorker({ orm, connection, settings, catalogue, dependencies });
  const workerRun = worker.run();
  await ensureCreditRenewalSchedule(client, settings.TEMPORAL_TASK_QUEUE, settings.CREDIT_RENEWAL_INTERVAL);
  const openStreams = new OpenStreams();
  const rateLimits = new RateLimits(dependencies.pool, dependencies.plans, { logger });
  const principals = new PrincipalCache(settings.DATABASE_URL, logger);
  await principals.start();
  const app = createApp({
    orm,
    catalogue,
    client,
    taskQueue: settings.TEMPORAL_TASK_QUEUE,
    ...dependencies,
    masterKey: settings.MASTER_KEY,
    version,
    logger,
    openStreams,
    metrics,
    rateLimits,
    principals,
    billing: settings,
    chat: { defaultModel: settings.CHAT_DEFAULT_MODEL, maxToolRounds: settings.CHAT_MAX_TOOL_ROUNDS },
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(settings.PORT, settings.HOST, () => resolve(listening));
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  const host = settings.HOST === '0.0.0.0' ? '127.0.0.1' : settings.HOST;

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let graceTimer: NodeJS.Timeout | undefined;
      const grace = new Promise((resolve) => (graceTimer = setTimeout(resolve, settings.SHUTDOWN_GRACE_MS)));
      await Promise.race([openStreams.settled(), grace]);
      clearTimeout(graceTimer);
      server.closeAllConnections();
      await stopped;
      await stopWorker(worker, workerRun).catch((error: unknown) =>
        logger.error({ err: error }, 'worker stopped with an error'),
      );
      await connection.close();
      await rateLimits.close();
      await principals.close();
      await dependencies.pool.end();
      await orm.close();
    })();
    return closing;
  };
  return { url: `http://${host}:${port}`, port, close };
}

if (import.meta.main) {
  const gateway = await startGateway();
  createLogger('gateway').info({ url: gateway.url, version }, 'gateway listening');
  stopOnSignals(gateway.close);
}
