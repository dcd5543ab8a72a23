/**
 * The API process: the gateway (PORT) and the agent service (AGENT_PORT), each a Koa app of its own over one set of
 * dependencies (database pools, Temporal connection, ledger, conversation store), plus an in-process worker on the
 * task queue sharing one NativeConnection with the client, so turns and completions start eagerly in this process.
 * `API_SERVICES` picks the services (`gateway`, `agents`, or both, the default). `npm run api`.
 * Serving the agent service, the process also runs an activity-only worker on `<task queue>-agents` (the activities
 * of scheduled and webhook runs that need the agent service: api/services/schedules/activities.ts,
 * api/services/webhooks/activities.ts), and at start reconciles the scheduled tasks with their Temporal schedules.
 * Every API process also folds the dashboard's usage changes now and then (api/services/dashboard/usage-fold.ts).
 * SIGTERM drains: stop accepting, let open streams finish (up to SHUTDOWN_GRACE_MS), stop the worker.
 */
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type Koa from 'koa';
import type { Server } from 'node:http';
import { loadCatalogue } from '../config/load-catalogue.ts';
import { loadPlans } from '../config/load-plans.ts';
import { readSettings } from '../config/settings.ts';
import { openOrm } from '../db/orm.ts';
import { createWorker, createWorkerDependencies, installTemporalRuntime, stopWorker } from '../worker/create-worker.ts';
import { createAgentService } from './agents/app.ts';
import { agentsTaskQueue } from '../common/schedules.ts';
import { createApp } from './gateway/app.ts';
import { createLogger } from '../process/logger.ts';
import { stopOnSignals } from '../process/signals.ts';
import { version } from '../process/version.ts';
import {
  ensureCreditRenewalSchedule,
  ensureMediaSweepSchedule,
  startCreditHoldSweepSchedule,
} from '../worker/schedules.ts';
import { Metrics } from './observability.ts';
import { Readiness, readinessInterceptor } from './readiness.ts';
import { PrincipalCache } from './principal-cache.ts';
import { RateLimits } from './rate-limit.ts';
import { OpenStreams } from './gateway/routes/completions/routes.ts';
import { startUsageFold } from './services/dashboard/usage-fold.ts';
import { startTracing } from '../process/tracing.ts';
import { requestTracing } from './tracing.ts';

export interface RunningService {
  url: string;
  port: number;
  /** The Koa app it serves (its routes: api/route-table.ts). */
  app: Koa;
}

export interface RunningGateway extends RunningService {
  /** The agent service, when this process serves it. */
  agents?: RunningService;
  /** Drains and stops everything this process started. */
  close(): Promise<void>;
}

/** Starts the API process with the services `API_SERVICES` names; `url` and `port` are the gateway's when it runs. */
export async function startGateway(
  environment: Record<string, string | undefined> = process.env,
): Promise<RunningGateway> {
  const settings = readSettings(environment);
  const logger = createLogger('gateway');
  const catalogue = loadCatalogue(environment);
  // OpenTelemetry traces when a collector is named (OTEL_EXPORTER_OTLP_*ENDPOINT), else null and nothing installed.
  const tracing = await startTracing(environment, 'api');
  const orm = await openOrm(settings.DATABASE_URL);
  installTemporalRuntime();
  const connection = await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
  // Its PostgreSQL and Temporal, probed for /health; while Temporal is seen down, calls to it fail fast with 503.
  const readiness = new Readiness({
    databaseUrl: settings.DATABASE_URL,
    temporal: connection,
    namespace: settings.TEMPORAL_NAMESPACE,
  });
  readiness.start();
  const client = new Client({
    connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    // The tracing interceptor first, so the workflow start's span covers the whole call.
    interceptors: { workflow: [...(tracing?.workflowClientInterceptors ?? []), readinessInterceptor(readiness)] },
  });
  const metrics = new Metrics({ defaultMetrics: true });
  const dependencies = createWorkerDependencies(
    orm,
    settings,
    catalogue,
    loadPlans(environment),
    (provider, outcome) => metrics.recordAttempt(provider, outcome),
    environment,
  );
  const worker = await createWorker({ orm, connection, settings, catalogue, dependencies, tracing });
  const workerRun = worker.run();
  await ensureCreditRenewalSchedule(client, settings.TEMPORAL_TASK_QUEUE, settings.CREDIT_RENEWAL_INTERVAL);
  await ensureMediaSweepSchedule(client, settings.TEMPORAL_TASK_QUEUE, settings.MEDIA_SWEEP_INTERVAL);
  await startCreditHoldSweepSchedule(client, settings.TEMPORAL_TASK_QUEUE, settings.CREDIT_HOLD_SWEEP_INTERVAL);
  const openStreams = new OpenStreams();
  const rateLimits = new RateLimits(dependencies.pool, dependencies.plans, { logger });
  // The dashboard's usage changes folded into its daily figures (any API process; one at a time).
  const usageFold = startUsageFold(dependencies.pool, logger);
  const principals = new PrincipalCache(dependencies.listener);
  await principals.start();
  await dependencies.stops.listen(dependencies.listener);
  await dependencies.listener.start();
  const shared = {
    orm,
    catalogue,
    client,
    taskQueue: settings.TEMPORAL_TASK_QUEUE,
    ...dependencies,
    masterKey: settings.MASTER_KEY,
    version,
    logger,
    readiness,
    openStreams,
    rateLimits,
    principals,
    billing: settings,
    trustedProxies: settings.TRUSTED_PROXIES,
    chat: { defaultModel: settings.CHAT_DEFAULT_MODEL, maxToolRounds: settings.CHAT_MAX_TOOL_ROUNDS },
    embeddingSettings: settings,
    batchWindowSeconds: settings.BATCH_WINDOW_SECONDS,
    responseCheck: settings.OPENAPI_RESPONSE_CHECK,
    tracing,
  };
  const servers: Server[] = [];
  const listen = async (app: Koa, port: number): Promise<RunningService> => {
    // Traced: a span per request, outermost, so it covers every other middleware (api/tracing.ts).
    if (tracing) app.middleware.unshift(requestTracing(tracing) as Koa.Middleware);
    const server: Server = await new Promise((resolve) => {
      const listening = app.listen(port, settings.HOST, () => resolve(listening));
    });
    server.keepAliveTimeout = 65_000;
    servers.push(server);
    const address = server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    const host = settings.HOST === '0.0.0.0' ? '127.0.0.1' : settings.HOST;
    return { url: `http://${host}:${bound}`, port: bound, app };
  };
  const gateway = settings.API_SERVICES.includes('gateway')
    ? await listen(createApp({ ...shared, metrics }), settings.PORT)
    : undefined;
  let agents: RunningService | undefined;
  let agentsWorker: { worker: Worker; run: Promise<void> } | undefined;
  if (settings.API_SERVICES.includes('agents')) {
    const service = createAgentService({
      ...shared,
      logger: logger.child({ service: 'agents' }),
      metrics: new Metrics(),
      settings,
      environment,
    });
    const worker = await Worker.create({
      connection,
      namespace: settings.TEMPORAL_NAMESPACE,
      taskQueue: agentsTaskQueue(settings.TEMPORAL_TASK_QUEUE),
      activities: service.agentsActivities,
      shutdownGraceTime: `${settings.SHUTDOWN_GRACE_MS}ms`,
      ...(tracing ? { interceptors: tracing.workerInterceptors } : {}),
    });
    agentsWorker = { worker, run: worker.run() };
    await service.schedules.reconcile();
    agents = await listen(service.app, settings.AGENT_PORT);
  }

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      const stopped = Promise.all(
        servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
      for (const server of servers) server.closeIdleConnections();
      let graceTimer: NodeJS.Timeout | undefined;
      const grace = new Promise((resolve) => (graceTimer = setTimeout(resolve, settings.SHUTDOWN_GRACE_MS)));
      await Promise.race([openStreams.settled(), grace]);
      clearTimeout(graceTimer);
      for (const server of servers) server.closeAllConnections();
      await stopped;
      await Promise.all([
        stopWorker(worker, workerRun),
        ...(agentsWorker ? [stopWorker(agentsWorker.worker, agentsWorker.run)] : []),
      ]).catch((error: unknown) => logger.error({ err: error }, 'worker stopped with an error'));
      await readiness.close();
      await connection.close();
      await rateLimits.close();
      await usageFold.stop();
      principals.close();
      await dependencies.listener.close();
      await dependencies.pool.end();
      await dependencies.userData.close();
      await orm.close();
      // The spans of the last requests, before the process exits.
      await tracing?.flush().catch((error: unknown) => logger.warn({ err: error }, 'traces could not be flushed'));
    })();
    return closing;
  };
  const main = (gateway ?? agents)!;
  return { ...main, ...(agents ? { agents } : {}), close };
}

if (import.meta.main) {
  const gateway = await startGateway();
  createLogger('api').info({ url: gateway.url, agents: gateway.agents?.url, version }, 'api listening');
  stopOnSignals(gateway.close);
}
