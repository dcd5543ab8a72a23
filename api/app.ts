/**
 * createApp(deps): the gateway's Koa app, without listening. Middleware order: errors, the Stripe webhook (it needs
 * the raw body), body, routes.
 */
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import type { Client } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Router as CompletionRouter } from '../activities/routing/router.ts';
import type { LoadedCatalogue } from '../config/load-catalogue.ts';
import type { WorkerDependencies } from '../worker/create-worker.ts';
import { requireKey, type AuthState } from './auth.ts';
import { errorRenderer } from './errors.ts';
import type { Logger } from './logger.ts';
import { Metrics, requestObserver } from './observability.ts';
import { limitKeyed, type RateLimits } from './rate-limit.ts';
import { accountRoutes } from './routes/account/routes.ts';
import { AccountService } from './routes/account/service.ts';
import { apiKeyRoutes } from './routes/apikeys/routes.ts';
import { billingRoutes, billingWebhookRoutes } from './routes/billing/routes.ts';
import { BillingService, type BillingSettings } from './routes/billing/service.ts';
import { ApiKeyService } from './routes/apikeys/service.ts';
import { completionRoutes, type OpenStreams } from './routes/completions/routes.ts';
import { CompletionService } from './routes/completions/service.ts';
import { modelRoutes } from './routes/models/routes.ts';
import { providerRoutes } from './routes/providers/routes.ts';

/** The app shares the in-process worker's dependencies (hub, journal, breaker, calls, ledger, plans). */
export interface AppDependencies extends WorkerDependencies {
  orm: MikroORM;
  catalogue: LoadedCatalogue;
  client: Client;
  taskQueue: string;
  masterKey: string | undefined;
  version: string;
  logger: Logger;
  openStreams: OpenStreams;
  metrics?: Metrics;
  rateLimits?: RateLimits;
  /** Stripe settings; absent or without keys, the billing endpoints answer 503. */
  billing?: BillingSettings;
}

export function createApp(dependencies: AppDependencies): Koa {
  const { catalogue, breaker, logger } = dependencies;
  const app = new Koa();
  app.proxy = true;
  app.on('error', (error: NodeJS.ErrnoException) => {
    // A client that hangs up mid-stream is routine, not an error worth a stack trace.
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET') return;
    logger.error({ err: error }, 'response error');
  });
  const keys = new ApiKeyService(dependencies.orm, dependencies.masterKey, dependencies.accounts);
  const completions = new CompletionService({
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    router: new CompletionRouter(catalogue, breaker, dependencies.plans),
    calls: dependencies.calls,
    ledger: dependencies.ledger,
    hub: dependencies.hub,
    journal: dependencies.journal,
  });

  const metrics = dependencies.metrics ?? new Metrics();
  app.use(requestObserver(logger, metrics));
  app.use(errorRenderer(logger));
  const billing = new BillingService({
    orm: dependencies.orm,
    plans: dependencies.plans,
    settings: dependencies.billing ?? ({} as BillingSettings),
    logger,
  });
  const webhook = billingWebhookRoutes(billing);
  app.use(webhook.routes()).use(webhook.allowedMethods({ throw: true }));
  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '8mb', encoding: 'utf-8' }));

  const metricsRouter = new Router().get('/metrics', async (context) => {
    context.type = metrics.registry.contentType;
    context.body = await metrics.registry.metrics();
  });
  const open = [
    modelRoutes(catalogue.catalogue, dependencies.plans),
    providerRoutes(catalogue.catalogue, breaker, dependencies.version),
    metricsRouter,
  ];
  for (const router of open) app.use(router.routes()).use(router.allowedMethods({ throw: true }));

  const keyed = new Router<AuthState>();
  keyed.use(requireKey(keys));
  if (dependencies.rateLimits) keyed.use(limitKeyed(dependencies.rateLimits));
  keyed.use(completionRoutes(completions, dependencies.openStreams, metrics).routes());
  keyed.use(apiKeyRoutes(keys).routes());
  const accounts = new AccountService(dependencies.orm, dependencies.ledger, dependencies.plans, catalogue.catalogue);
  keyed.use(accountRoutes(accounts, dependencies.accounts).routes());
  keyed.use(billingRoutes(billing).routes());
  app.use(keyed.routes()).use(keyed.allowedMethods({ throw: true }));
  return app;
}
