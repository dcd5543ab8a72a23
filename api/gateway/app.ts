/**
 * createApp(deps): the gateway's Koa app, without listening. Middleware order: forwarded headers from trusted proxies
 * (api/forwarding.ts), request log, the tests' check of every answer against the OpenAPI document
 * (OPENAPI_RESPONSE_CHECK: api/openapi/response-check.ts), errors, the text check of path and query
 * (api/text-policy.ts), the webhooks (they need the raw body), body parser, the text check of the body, routes,
 * `/openapi.json` and `/docs` (api/openapi/routes.ts).
 */
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import type { Client } from '@temporalio/client';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Router as CompletionRouter } from '../../activities/routing/router.ts';
import type { LoadedCatalogue } from '../../config/load-catalogue.ts';
import type { WorkerDependencies } from '../../worker/create-worker.ts';
import { Admission } from './admission.ts';
import { identifyKey, requireKey, type AuthState } from '../auth.ts';
import { errorRenderer } from '../errors.ts';
import { forwardedFromTrustedProxies } from '../forwarding.ts';
import type { TrustedProxies } from '../../config/trusted-proxies.ts';
import { bodyText, urlText } from '../text-policy.ts';
import type { Logger } from '../../process/logger.ts';
import { Metrics, registerCapacityGauges, requestObserver } from '../observability.ts';
import type { PrincipalCache } from '../principal-cache.ts';
import { limitKeyed, type RateLimits } from '../rate-limit.ts';
import { accountRoutes } from './routes/account/routes.ts';
import { AccountService } from '../services/account/service.ts';
import { apiKeyRoutes } from './routes/apikeys/routes.ts';
import { billingRoutes, billingWebhookRoutes } from './routes/billing/routes.ts';
import { BillingService, type BillingSettings } from '../services/billing/service.ts';
import { ApiKeyService } from '../services/apikeys/service.ts';
import { chatRoutes, integrationRoutes } from './routes/chat/routes.ts';
import { Linking } from '../services/chat/linking.ts';
import { ChatService } from '../services/chat/service.ts';
import { MessengerInbox } from './routes/webhooks/inbound.ts';
import { lineWebhookRoutes } from './routes/webhooks/line.ts';
import { telegramWebhookRoutes } from './routes/webhooks/telegram.ts';
import { completionRoutes, requestRoutes, type OpenStreams } from './routes/completions/routes.ts';
import { CompletionService } from './routes/completions/service.ts';
import { countTokensRoutes, messageRoutes } from './routes/messages/routes.ts';
import { responseCreateRoutes, responseRoutes } from './routes/responses/routes.ts';
import { ResponseStore } from '../../activities/responses/response-store.ts';
import { batchRoutes } from './routes/batches/routes.ts';
import { fileRoutes } from './routes/files/routes.ts';
import { mediaFileRoutes, mediaRoutes } from './routes/media/routes.ts';
import { mediaJobRoutes } from './routes/media/job-routes.ts';
import { CallbackSecrets } from '../../activities/media/callbacks.ts';
import { AsyncMediaJobs, MediaService, mediaServiceDependencies } from './routes/media/service.ts';
import { syncMediaRoutes } from './routes/media/sync-routes.ts';
import { modelRoutes } from './routes/models/routes.ts';
import { embeddingRoutes } from './routes/embeddings/routes.ts';
import { createEmbeddingService } from '../../activities/embeddings/embedding-service.ts';
import type { Settings } from '../../config/settings.ts';
import { providerRoutes } from './routes/providers/routes.ts';
import { gatewayContracts, gatewayDescription } from './openapi.ts';
import { openApiRoutes } from '../openapi/routes.ts';
import { responseCheck } from '../openapi/response-check.ts';
import { healthRoutes, type Readiness } from '../readiness.ts';

/** The app shares the in-process worker's dependencies (hub, journal, breaker, calls, ledger, plans). */
export interface AppDependencies extends WorkerDependencies {
  orm: MikroORM;
  catalogue: LoadedCatalogue;
  client: Client;
  taskQueue: string;
  masterKey: string | undefined;
  version: string;
  logger: Logger;
  /** Its database and Temporal as last probed: `/health` (api/readiness.ts). */
  readiness: Readiness;
  openStreams: OpenStreams;
  metrics?: Metrics;
  rateLimits?: RateLimits;
  /** Principals cached per key (dropped on change through LISTEN/NOTIFY); absent: every request reads the key. */
  principals?: PrincipalCache;
  /** Stripe settings; absent or without keys, the billing endpoints answer 503. */
  billing?: BillingSettings;
  /** The reverse proxies whose X-Forwarded-* headers are believed (TRUSTED_PROXIES); absent: none. */
  trustedProxies?: TrustedProxies;
  /** Session chat: the model a message without one goes to, and the bound on tool rounds per turn. */
  chat: { defaultModel: string; maxToolRounds: number };
  /** `POST /v1/embeddings`: the default model and the per-request limits. */
  embeddingSettings: Pick<Settings, 'EMBEDDING_MODEL' | 'EMBEDDING_MAX_INPUTS' | 'EMBEDDING_MAX_TOKENS'>;
  /** BATCH_WINDOW_SECONDS: how long a batch runs before it expires (default 24 hours). */
  batchWindowSeconds?: number;
  /** OPENAPI_RESPONSE_CHECK (tests): every answer is held against the OpenAPI document (api/openapi/response-check.ts). */
  responseCheck?: boolean;
}

export function createApp(dependencies: AppDependencies): Koa {
  const { catalogue, breaker, logger } = dependencies;
  const app = new Koa();
  // Forwarded headers are believed from the operator's proxies only (api/forwarding.ts), never through app.proxy.
  app.use(forwardedFromTrustedProxies(dependencies.trustedProxies ?? { addresses: [] }));
  app.on('error', (error: NodeJS.ErrnoException) => {
    // A client that hangs up mid-stream is routine, not an error worth a stack trace.
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET') return;
    logger.error({ err: error }, 'response error');
  });
  const keys = new ApiKeyService({
    orm: dependencies.orm,
    pool: dependencies.pool,
    masterKey: dependencies.masterKey,
    accounts: dependencies.accounts,
    principals: dependencies.principals,
  });
  const router = new CompletionRouter(catalogue, breaker, dependencies.plans);
  const completions = new CompletionService({
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    router,
    calls: dependencies.calls,
    ledger: dependencies.ledger,
    hub: dependencies.hub,
    journal: dependencies.journal,
  });

  const metrics = dependencies.metrics ?? new Metrics();
  app.use(requestObserver(logger, metrics));
  if (dependencies.responseCheck) app.use(responseCheck('gateway', gatewayContracts, logger));
  app.use(errorRenderer(logger));
  app.use(urlText());
  const billing = new BillingService({
    orm: dependencies.orm,
    plans: dependencies.plans,
    settings: dependencies.billing ?? ({} as BillingSettings),
    logger,
  });
  const chat = new ChatService({
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    router,
    catalogue,
    conversations: dependencies.conversations,
    ledger: dependencies.ledger,
    hub: dependencies.hub,
    journal: dependencies.journal,
    toolSettings: dependencies.toolSettings,
    defaultModel: dependencies.chat.defaultModel,
    maxToolRounds: dependencies.chat.maxToolRounds,
    calls: dependencies.calls,
  });
  const linking = new Linking({
    conversations: dependencies.conversations,
    limits: dependencies.rateLimits,
    toolSettings: dependencies.toolSettings,
    messengers: dependencies.messengers,
  });
  const inbox = new MessengerInbox({
    pool: dependencies.pool,
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    chat,
    conversations: dependencies.conversations,
    linking,
    keys,
    limits: dependencies.rateLimits,
    logger,
  });
  // Webhooks authenticate by a signature over the raw body, so they come before the body parser.
  const webhooks = [
    billingWebhookRoutes(billing),
    lineWebhookRoutes(dependencies.messengerSettings.line, inbox),
    telegramWebhookRoutes(dependencies.messengerSettings.telegram, inbox),
  ];
  for (const webhook of webhooks) app.use(webhook.routes()).use(webhook.allowedMethods({ throw: true }));
  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '8mb', encoding: 'utf-8' }));
  app.use(bodyText());
  // A key that is sent is checked here, before any route, so an invalid one is a 401 on every path (api/auth.ts).
  app.use(identifyKey(keys));

  registerCapacityGauges(metrics.registry, dependencies.capacity);
  const metricsRouter = new Router().get('/metrics', async (context) => {
    context.type = metrics.registry.contentType;
    context.body = await metrics.registry.metrics();
  });
  const open = [
    healthRoutes(dependencies.readiness, { version: dependencies.version }),
    modelRoutes(catalogue.catalogue, dependencies.plans),
    providerRoutes(catalogue.catalogue, breaker),
    integrationRoutes(dependencies.toolSettings, {
      line: !!dependencies.messengerSettings.line,
      telegram: !!dependencies.messengerSettings.telegram,
    }),
    mediaFileRoutes(dependencies.media.files),
    metricsRouter,
    openApiRoutes(gatewayDescription(dependencies.version)),
  ];
  for (const router of open) app.use(router.routes()).use(router.allowedMethods({ throw: true }));

  // A completion is rate limited by its admission, in the statement that reserves its credits; every other keyed
  // route by the limiter middleware.
  const admission = new Admission({
    pool: dependencies.pool,
    limits: dependencies.rateLimits,
    ledger: dependencies.ledger,
  });
  const admitted = new Router<AuthState>();
  admitted.use(requireKey());
  admitted.use(completionRoutes(completions, admission, dependencies.openStreams, metrics).routes());
  const door = { completions, admission, openStreams: dependencies.openStreams, metrics };
  admitted.use(messageRoutes(door, { allowedHosts: dependencies.toolSettings.fetchAllowedHosts }).routes());
  const responseDoor = {
    ...door,
    responses: new ResponseStore(dependencies.pool),
    capacity: dependencies.capacity,
    client: dependencies.client,
    stops: dependencies.stops,
  };
  admitted.use(responseCreateRoutes(responseDoor).routes());
  const embeddings = createEmbeddingService({
    client: dependencies.client,
    settings: { TEMPORAL_TASK_QUEUE: dependencies.taskQueue, ...dependencies.embeddingSettings },
    catalogue,
    dependencies,
  });
  admitted.use(embeddingRoutes(embeddings, admission).routes());
  app.use(admitted.routes()).use(admitted.allowedMethods({ throw: true }));

  // Session chat: a key's user, or a guest without any key (api/gateway/routes/chat/routes.ts); limited per caller there.
  const chatRouter = new Router<Partial<AuthState>>();
  chatRouter.use(
    chatRoutes({
      chat,
      conversations: dependencies.conversations,
      linking,
      limits: dependencies.rateLimits,
      openStreams: dependencies.openStreams,
    }).routes(),
  );
  app.use(chatRouter.routes()).use(chatRouter.allowedMethods({ throw: true }));

  const keyed = new Router<AuthState>();
  keyed.use(requireKey());
  if (dependencies.rateLimits) keyed.use(limitKeyed(dependencies.rateLimits));
  keyed.use(requestRoutes(completions, dependencies.openStreams).routes());
  keyed.use(countTokensRoutes(completions).routes());
  keyed.use(responseRoutes(responseDoor, completions).routes());
  keyed.use(fileRoutes(dependencies.apiFiles).routes());
  keyed.use(
    batchRoutes({
      batches: dependencies.batches,
      apiFiles: dependencies.apiFiles,
      client: dependencies.client,
      taskQueue: dependencies.taskQueue,
      plans: dependencies.plans,
      windowSeconds: dependencies.batchWindowSeconds ?? 24 * 60 * 60,
    }).routes(),
  );
  keyed.use(apiKeyRoutes(keys).routes());
  const accounts = new AccountService(
    dependencies.orm,
    dependencies.ledger,
    dependencies.plans,
    catalogue.catalogue,
    dependencies.conversations,
    dependencies.principals,
  );
  keyed.use(accountRoutes(accounts).routes());
  keyed.use(billingRoutes(billing).routes());
  const mediaDependencies = mediaServiceDependencies(dependencies);
  const mediaService = new MediaService(mediaDependencies);
  const asyncJobs = new AsyncMediaJobs(mediaDependencies);
  keyed.use(mediaRoutes(mediaService, asyncJobs).routes());
  keyed.use(mediaJobRoutes(asyncJobs, new CallbackSecrets(dependencies.pool)).routes());
  const mediaInputs = { files: dependencies.media.files, allowedHosts: dependencies.toolSettings.fetchAllowedHosts };
  keyed.use(syncMediaRoutes(mediaService, mediaInputs).routes());
  app.use(keyed.routes()).use(keyed.allowedMethods({ throw: true }));
  return app;
}
