/**
 * createAgentApp(deps): the agent service's Koa app (spec agent-service-interface.md), without listening. It runs on
 * the gateway's core: the same users, keys and credits, the same conversation store, the completions router for
 * every model call, the chat-turn workflow and tool runtime. Middleware order: forwarded headers from trusted
 * proxies (api/forwarding.ts), request log, the tests' check of every answer against the OpenAPI document
 * (OPENAPI_RESPONSE_CHECK: api/openapi/response-check.ts), errors, the text check of path and query
 * (api/text-policy.ts), webhooks that sign their raw body, body parser, the text check of the body, the per-IP limit
 * (spec 8: after the text checks, so refused text is not counted), caller authentication, then each area's routes,
 * `/openapi.json` and `/docs` (api/openapi/routes.ts). Requests for a published site's host (`<label>.<SITE_DOMAIN>`)
 * are answered right after the request log, before all of it (routes/sites/site-host.ts).
 *
 * Areas (one folder each under api/agents/routes/): auth (logins, linking, keys), agents (catalogue and custom
 * agents), chat (routed streaming chat, agent loops, approvals), history (sessions, search, usage), suggest
 * (follow-up questions), memory, schedule (scheduled tasks), billing, sites (publishing, `/deploy/*`), uploads
 * (files), rag (indexing and search), sql (read-only queries, table imports), a2a (agent card and the A2A JSON-RPC
 * endpoint), teams (members, invitations, broadcasts), webhooks (inbound webhooks: the signed receivers of
 * `/webhook/*` and `/slack/events`, mounted before the body parser, and their management and runs), automation
 * (`/automation/*`), messengers (`/send-to-messenger`).
 *
 * `createAgentService` also returns what the process wires beside the app: the scheduled tasks' service (reconciled
 * with Temporal at start) and the activities scheduled and webhook runs need from this service (served on its own
 * task queue).
 *
 * Callers (api/auth.ts): the `tessera_session` cookie of a magic-link or Google login (api/services/logins/), an
 * `Authorization: Bearer te_…` key, or `X-API-Key` on `/api/v1/*` and `/a2a*`.
 */
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import { Router as CompletionRouter } from '../../activities/routing/router.ts';
import { loadAgents } from '../../config/load-agents.ts';
import { knownToolNames } from '../../activities/tools/index.ts';
import type { Settings } from '../../config/settings.ts';
import { authenticateCaller, serviceOrigin, type CallerState } from '../auth.ts';
import { errorRenderer } from '../errors.ts';
import { webApp } from './web.ts';
import { forwardedFromTrustedProxies } from '../forwarding.ts';
import { bodyText, urlText } from '../text-policy.ts';
import type { AppDependencies } from '../gateway/app.ts';
import { Admission } from '../gateway/admission.ts';
import { CompletionService } from '../gateway/routes/completions/service.ts';
import { Metrics, requestObserver } from '../observability.ts';
import type { RateLimits, Subject } from '../rate-limit.ts';
import { AgentDirectory } from '../services/agents/service.ts';
import { AgentChat } from '../services/agents/agent-chat.ts';
import { AgentRouter } from '../services/agents/agent-router.ts';
import { ApiKeyService } from '../services/apikeys/service.ts';
import { ChatService } from '../services/chat/service.ts';
import { agentChatRoutes } from './routes/chat/routes.ts';
import { suggestRoutes } from './routes/suggest/routes.ts';
import { agentRoutes } from './routes/agents/routes.ts';
import { memoryRoutes } from './routes/memory/routes.ts';
import { UsageService } from '../services/usage/service.ts';
import { historyRoutes } from './routes/history/routes.ts';
import { sharingRoutes } from './routes/sharing/routes.ts';
import { SharingService } from '../services/sharing/service.ts';
import { dashboardRoutes } from './routes/dashboard/routes.ts';
import { DashboardService } from '../services/dashboard/service.ts';
import { mediaDoorRoutes } from './routes/media/routes.ts';
import { visionRoutes } from './routes/vision/routes.ts';
import { mediaFileRoutes } from '../gateway/routes/media/routes.ts';
import { MediaService, mediaServiceDependencies } from '../gateway/routes/media/service.ts';
import { agentServiceRegistry } from '../observability.ts';
import { createMailer } from '../../activities/mail/mailer.ts';
import { BillingService } from '../services/billing/service.ts';
import { Linking } from '../services/chat/linking.ts';
import { GoogleLogin } from '../services/logins/google.ts';
import { googleStatus } from '../../activities/google/google-accounts.ts';
import { MagicLinks } from '../services/logins/magic-links.ts';
import { WebSessions } from '../services/logins/web-sessions.ts';
import { authRoutes } from './routes/auth/routes.ts';
import { billingRoutes, billingWebhookRoutes } from './routes/billing/routes.ts';
import { SiteService } from '../services/sites/service.ts';
import { siteHost } from './routes/sites/site-host.ts';
import { siteRoutes } from './routes/sites/routes.ts';
import { uploadRoutes } from './routes/uploads/routes.ts';
import { ragRoutes } from './routes/rag/routes.ts';
import { RagService } from '../services/rag/service.ts';
import { createEmbeddingService } from '../../activities/embeddings/embedding-service.ts';
import { a2aRoutes } from './routes/a2a/routes.ts';
import { sqlRoutes } from './routes/sql/routes.ts';
import { SqlService } from '../services/sql/service.ts';
import { ImportStore } from '../../activities/user-data/import-store.ts';
import { TeamService } from '../services/teams/service.ts';
import { teamRoutes } from './routes/teams/routes.ts';
import { scheduleRoutes } from './routes/schedule/routes.ts';
import { ScheduleService } from '../services/schedules/service.ts';
import { createScheduleActivities } from '../services/schedules/activities.ts';
import type { ScheduleActivities } from '../../workflows/scheduled-run.workflow.ts';
import type { WebhookActivities } from '../../workflows/webhook-run.workflow.ts';
import type { RoutingActivities } from '../../workflows/chat-turn.workflow.ts';
import type { RouteMessageInput } from '../../common/chat-turn.ts';
import { Context } from '@temporalio/activity';
import type { MessengerPlatform } from '../../common/messengers.ts';
import { SlackClient } from '../../activities/messengers/slack.ts';
import { messengerSettingsOf } from '../../config/settings.ts';
import { agentsTaskQueue } from '../../common/schedules.ts';
import { AgentRuns } from '../services/agent-runs/prepare.ts';
import { WebhookRuns } from '../services/webhooks/runs.ts';
import { createWebhookActivities } from '../services/webhooks/activities.ts';
import { webhookDeliveryRoutes } from './routes/webhooks/deliveries.ts';
import { webhookRoutes } from './routes/webhooks/routes.ts';
import { automationRoutes } from './routes/automation/routes.ts';
import { messengerRoutes } from './routes/messengers/routes.ts';
import { adminRoutes } from './routes/admin/routes.ts';
import { AdminService } from '../services/admin/service.ts';
import { AccountService } from '../services/account/service.ts';
import { Operators } from '../services/admin/operators.ts';
import { agentServiceContracts, agentsDescription } from './openapi.ts';
import { openApiRoutes } from '../openapi/routes.ts';
import { responseCheck } from '../openapi/response-check.ts';
import { healthRoutes } from '../readiness.ts';

export interface AgentAppDependencies extends AppDependencies {
  settings: Settings;
  environment: Record<string, string | undefined>;
}

/** Spec 8: paths starting `/chat`, `/api` or `/a2a`, counted per IP (AGENT_IP_LIMIT_PER_MINUTE, default 30 per 60 s). */
export const perIpLimitedPrefixes = ['/chat', '/api', '/a2a'];

/** The service's own origin, and the others allowed to send cookie-authenticated writes (CSRF defence). */
export function allowedOrigins(settings: Settings): (origin: string, requestOrigin: string) => boolean {
  const extra = new Set(settings.AGENT_ALLOWED_ORIGINS.map((origin) => new URL(origin).origin));
  const publicOrigin = settings.AGENT_PUBLIC_URL ? new URL(settings.AGENT_PUBLIC_URL).origin : null;
  return (origin, requestOrigin) => origin === requestOrigin || origin === publicOrigin || extra.has(origin);
}

export function createAgentApp(dependencies: AgentAppDependencies): Koa {
  return createAgentService(dependencies).app;
}

export interface AgentService {
  app: Koa;
  schedules: ScheduleService;
  /** Served by an activity-only worker on `agentsTaskQueue(taskQueue)` (api/server.ts). */
  agentsActivities: ScheduleActivities & WebhookActivities & RoutingActivities;
}

export function createAgentService(dependencies: AgentAppDependencies): AgentService {
  const { logger, settings } = dependencies;
  const app = new Koa();
  // Forwarded headers are believed from the operator's proxies only (api/forwarding.ts), never through app.proxy.
  app.use(forwardedFromTrustedProxies(settings.TRUSTED_PROXIES));
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET') return;
    logger.error({ err: error }, 'response error');
  });
  const metrics = dependencies.metrics ?? new Metrics();
  app.use(requestObserver(logger, metrics));
  // Published sites on `<label>.<SITE_DOMAIN>`: answered before anything of the app runs (site-host.ts).
  app.use(siteHost(dependencies.sites, dependencies.sites.urls));
  if (dependencies.responseCheck) app.use(responseCheck('agents', agentServiceContracts, logger));
  app.use(errorRenderer(logger));
  app.use(urlText());
  // The web app (web/): its hashed assets and, for a browser asking for one of its pages, index.html (web.ts).
  app.use(webApp());

  const billing = new BillingService({
    orm: dependencies.orm,
    plans: dependencies.plans,
    settings: dependencies.billing ?? settings,
    logger,
  });
  // Signed by Stripe over the raw body: before the body parser.
  const webhook = billingWebhookRoutes(billing);
  app.use(webhook.routes()).use(webhook.allowedMethods({ throw: true }));
  // Inbound webhooks, each signed by its sender over the raw body: before the body parser too.
  const keys = new ApiKeyService({
    orm: dependencies.orm,
    pool: dependencies.pool,
    masterKey: dependencies.masterKey,
    accounts: dependencies.accounts,
    principals: dependencies.principals,
  });
  const webhookRuns = new WebhookRuns({
    pool: dependencies.pool,
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    agentsTaskQueue: agentsTaskQueue(dependencies.taskQueue),
    journal: dependencies.journal,
    capacity: dependencies.capacity,
  });
  const slackClient = dependencies.messengers.slack instanceof SlackClient ? dependencies.messengers.slack : null;
  const deliveries = webhookDeliveryRoutes({
    store: dependencies.webhooks,
    runs: webhookRuns,
    limits: dependencies.rateLimits,
    principalForUser: (userId) => keys.principalForUser(userId),
    slack: messengerSettingsOf(settings).slack,
    slackClient,
  });
  app.use(deliveries.routes()).use(deliveries.allowedMethods({ throw: true }));

  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '12mb', encoding: 'utf-8' }));
  app.use(bodyText());
  // Spec 8's per-IP limit counts after the text check of path, query and body, so a refused text is not counted
  // (docs/operations.md, "Text the platform accepts"). None of the raw-body routes above is under its prefixes.
  if (dependencies.rateLimits && settings.AGENT_IP_LIMIT_PER_MINUTE > 0) {
    app.use(limitPerIp(dependencies.rateLimits, settings.AGENT_IP_LIMIT_PER_MINUTE));
  }
  const sessions = new WebSessions(dependencies.pool);
  const linking = new Linking({
    conversations: dependencies.conversations,
    limits: dependencies.rateLimits,
    toolSettings: dependencies.toolSettings,
    messengers: dependencies.messengers,
  });
  const isAllowed = allowedOrigins(settings);
  // On every request, not as router middleware (which runs only when a route matches): a credential that is sent is
  // checked before routing, so a bad key is a 401 on any path (X-API-Key on an unknown /api/v1/ path too).
  app.use(
    authenticateCaller(keys, sessions, (context) => {
      const origin = context.get('origin') || refererOrigin(context.get('referer'));
      return origin !== '' && isAllowed(origin, serviceOrigin(context));
    }) as Koa.Middleware,
  );
  // Public on purpose (probes, Prometheus; no user data), but after the credential check like every path: a sent
  // key or cookie must be valid even here (docs/agent-service.md, "Who may call").
  const health = healthRoutes(dependencies.readiness, { service: 'agents', version: dependencies.version });
  app.use(health.routes()).use(health.allowedMethods({ throw: true }));
  const open = new Router();
  // Request metrics, the agent turns' and tools' counters, and the approvals waiting (api/observability.ts).
  const exposed = agentServiceRegistry(metrics, dependencies.conversations);
  open.get('/metrics', async (context) => {
    context.type = exposed.contentType;
    context.body = await exposed.metrics();
  });
  app.use(open.routes()).use(open.allowedMethods({ throw: true }));
  // `/openapi.json` and `/docs`: public too, after the credential check.
  const reference = openApiRoutes(agentsDescription(dependencies.version));
  app.use(reference.routes()).use(reference.allowedMethods({ throw: true }));
  // The media doors answer the gateway's file paths (`/api/v1/media/files/{name}`): this service serves them too.
  const mediaFiles = mediaFileRoutes(dependencies.media.files);
  app.use(mediaFiles.routes()).use(mediaFiles.allowedMethods({ throw: true }));
  const mailer = createMailer({
    pool: dependencies.pool,
    smtpUrl: settings.SMTP_URL,
    from: settings.MAIL_FROM,
    log: (line) => logger.info(line),
  });
  const routes = new Router<CallerState>();
  routes.use(
    authRoutes({
      settings,
      pool: dependencies.pool,
      keys,
      sessions,
      magicLinks: new MagicLinks({ pool: dependencies.pool, mailer, productName: 'Tessera' }),
      ...googleLogin(dependencies, keys),
      ledger: dependencies.ledger,
      conversations: dependencies.conversations,
      linking,
      limits: dependencies.rateLimits,
      log: (fields, message) => logger.error(fields, message),
    }).routes(),
  );
  routes.use(billingRoutes(billing, dependencies.plans).routes());
  const oneShot = oneShotCompletions(dependencies);
  routes.use(suggestRoutes({ ...oneShot, model: settings.AGENT_ROUTER_MODEL }).routes());
  // The agent catalogue is validated here, at start-up: a bad file stops the process.
  const agents = new AgentDirectory({
    pool: dependencies.pool,
    catalogue: dependencies.catalogue,
    plans: dependencies.plans,
    builtIns: loadAgents(dependencies.catalogue.catalogue, knownToolNames(), settings.AGENT_CATALOGUE_PATH),
    defaultModel: settings.AGENT_DEFAULT_MODEL,
  });
  routes.use(agentRoutes(agents).routes(), memoryRoutes(dependencies.memories).routes());
  const chat = new ChatService({
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    router: oneShot.router,
    catalogue: dependencies.catalogue,
    conversations: dependencies.conversations,
    ledger: dependencies.ledger,
    hub: dependencies.hub,
    journal: dependencies.journal,
    toolSettings: dependencies.toolSettings,
    defaultModel: settings.AGENT_DEFAULT_MODEL,
    maxToolRounds: dependencies.chat.maxToolRounds,
    calls: dependencies.calls,
    memories: dependencies.memories,
  });
  const agentChat = new AgentChat({
    client: dependencies.client,
    chat,
    router: new AgentRouter({ calls: dependencies.calls, model: settings.AGENT_ROUTER_MODEL }),
    planner: oneShot.router,
    pool: dependencies.pool,
    ledger: dependencies.ledger,
    journal: dependencies.journal,
    hub: dependencies.hub,
    stops: dependencies.stops,
    conversations: dependencies.conversations,
    memories: dependencies.memories,
    calls: dependencies.calls,
    agentsTaskQueue: agentsTaskQueue(dependencies.taskQueue),
    agents: {
      list: async (principal) =>
        (await agents.list(principal)).map((agent) => ({ ...agent, keywords: agent.routing.keywords })),
    },
    toolSettings: dependencies.toolSettings,
    catalogue: dependencies.catalogue.catalogue,
    workspaceConnected: async (userId, workspace) => (await googleStatus(dependencies.pool, userId)).agents[workspace],
    settings: {
      maxIterations: settings.AGENT_LOOP_MAX_ITERATIONS,
      approvalTimeoutMs: settings.AGENT_APPROVAL_TIMEOUT,
      iterationsPerRun: settings.AGENT_LOOP_ITERATIONS_PER_RUN,
      memoryLimit: settings.AGENT_MEMORY_LIMIT,
      visionModel: settings.AGENT_VISION_MODEL,
    },
  });
  routes.use(
    agentChatRoutes({
      agentChat,
      chat,
      openStreams: dependencies.openStreams,
      uploads: dependencies.uploads,
      conversations: dependencies.conversations,
    }).routes(),
  );
  const { conversations, pool } = dependencies;
  const usage = new UsageService({ pool, conversations, catalogue: dependencies.catalogue.catalogue });
  routes.use(historyRoutes({ conversations, usage, chat }).routes());
  routes.use(
    sharingRoutes({
      sharing: new SharingService({ pool, conversations, usage }),
      ...(settings.AGENT_PUBLIC_URL ? { publicUrl: settings.AGENT_PUBLIC_URL } : {}),
    }).routes(),
  );
  const dashboard = new DashboardService({ pool });
  routes.use(dashboardRoutes(dashboard).routes());
  const fetchAllowedHosts = dependencies.toolSettings.fetchAllowedHosts;
  routes.use(
    mediaDoorRoutes({
      media: new MediaService(mediaServiceDependencies(dependencies)),
      inputs: { files: dependencies.media.files, allowedHosts: fetchAllowedHosts },
      ...(dependencies.rateLimits ? { limits: dependencies.rateLimits } : {}),
    }).routes(),
  );
  routes.use(
    visionRoutes({
      completions: oneShot.completions,
      admission: oneShot.admission,
      catalogue: dependencies.catalogue.catalogue,
      pool,
      defaultModel: settings.AGENT_VISION_MODEL,
      allowedHosts: fetchAllowedHosts,
    }).routes(),
  );
  routes.use(siteRoutes(new SiteService(dependencies.sites)).routes());
  const rag = new RagService({
    rag: dependencies.rag,
    uploads: dependencies.uploads,
    ragModel: dependencies.ragModel,
    embeddings: createEmbeddingService({
      client: dependencies.client,
      settings,
      catalogue: dependencies.catalogue,
      dependencies,
    }),
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
  });
  routes.use(
    uploadRoutes({
      uploads: dependencies.uploads,
      describe: (userId, fileIds) => rag.describeFiles(userId, fileIds),
    }).routes(),
  );
  routes.use(ragRoutes(rag).routes());
  routes.use(
    sqlRoutes(
      new SqlService({
        userData: dependencies.userData,
        imports: new ImportStore(pool),
        uploads: dependencies.uploads,
        client: dependencies.client,
        taskQueue: dependencies.taskQueue,
        importWaitMs: settings.SQL_IMPORT_WAIT,
      }),
    ).routes(),
  );
  routes.use(
    a2aRoutes({
      client: dependencies.client,
      taskQueue: dependencies.taskQueue,
      agentChat,
      chat,
      pool,
      fetchAllowedHosts: settings.FETCH_ALLOWED_HOSTS,
      log: (fields, message) => logger.warn(fields, message),
      publicAgents: async () => (await agents.list(null)).filter((agent) => agent.builtin),
      ...(settings.AGENT_PUBLIC_URL ? { publicUrl: settings.AGENT_PUBLIC_URL } : {}),
      version: dependencies.version,
    }).routes(),
  );
  routes.use(
    teamRoutes({
      teams: new TeamService({
        pool,
        client: dependencies.client,
        taskQueue: dependencies.taskQueue,
        mailer,
        productName: 'Tessera',
      }),
      settings,
      pool,
      keys,
      sessions,
      limits: dependencies.rateLimits,
      log: (fields, message) => logger.error(fields, message),
    }).routes(),
  );
  const schedules = new ScheduleService({
    pool,
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    settings: {
      minIntervalSeconds: settings.SCHEDULE_MIN_INTERVAL_SECONDS,
      catchupWindow: settings.SCHEDULE_CATCHUP_WINDOW,
    },
    hasAgent: async (principal, agentId) => (await agents.get(principal, agentId)) !== null,
    capacity: dependencies.capacity,
    log: (fields, message) => logger.info(fields, message),
  });
  routes.use(scheduleRoutes(schedules).routes());
  routes.use(
    webhookRoutes({
      store: dependencies.webhooks,
      runs: webhookRuns,
      publicUrl: settings.AGENT_PUBLIC_URL,
      hasAgent: async (principal, agentId) => (await agents.get(principal, agentId)) !== null,
    }).routes(),
  );
  routes.use(
    automationRoutes({
      agents,
      runs: webhookRuns,
      limits: dependencies.rateLimits,
      syncWaitMs: settings.AUTOMATION_SYNC_WAIT,
    }).routes(),
  );
  routes.use(messengerRoutes({ pool, conversations, messengers: dependencies.messengers }).routes());
  // The operator console's API (`/admin/api/*`; the page is the web app's `/admin`).
  routes.use(
    adminRoutes({
      admin: new AdminService({
        pool,
        ledger: dependencies.ledger,
        keys,
        dashboard,
        completions: oneShot.completions,
        client: dependencies.client,
        taskQueue: dependencies.taskQueue,
        catalogue: dependencies.catalogue.catalogue,
        breaker: dependencies.breaker,
        media: dependencies.media,
        temporalUiUrl: temporalUiUrl(settings, dependencies.environment),
        adminEmails: settings.ADMIN_EMAILS,
        capacity: dependencies.capacity,
        accounts: new AccountService(
          dependencies.orm,
          dependencies.ledger,
          dependencies.plans,
          dependencies.catalogue.catalogue,
          conversations,
          dependencies.principals,
        ),
      }),
      operators: new Operators(pool, settings.ADMIN_EMAILS),
    }).routes(),
  );
  app.use(routes.routes()).use(routes.allowedMethods({ throw: true }));
  // Unattended agent runs (scheduled tasks, webhooks) are prepared here, by the API's own chat preparation.
  const agentRuns = new AgentRuns({
    pool,
    agentChat,
    conversations,
    principalForUser: (userId) => keys.principalForUser(userId),
    platforms: Object.keys(dependencies.messengers) as MessengerPlatform[],
  });
  // The routing step of the turns this service starts: a local activity in this process's worker, and an activity on
  // the service's task queue for a turn whose worker does not serve the agent service.
  if (dependencies.agentRouting) {
    dependencies.agentRouting.route = (input, signal) => agentChat.route(input, signal);
  }
  const agentsActivities = {
    routeMessage: (input: RouteMessageInput) => agentChat.route(input, Context.current().cancellationSignal),
    ...createScheduleActivities({ schedules, runs: agentRuns }),
    ...createWebhookActivities({
      pool,
      runs: webhookRuns,
      agentRuns,
      conversations,
      linking,
      limits: dependencies.rateLimits,
      principalForUser: (userId) => keys.principalForUser(userId),
      fetchAllowedHosts: settings.FETCH_ALLOWED_HOSTS,
    }),
  };
  return { app, schedules, agentsActivities };
}

/**
 * One-shot model calls as the gateway makes them (`POST /v1/chat/completions`): its CompletionService over the same
 * router, calls, ledger, hub and journal, admitted by the same rate limits and credit holds.
 */
function oneShotCompletions(dependencies: AgentAppDependencies) {
  const router = new CompletionRouter(dependencies.catalogue, dependencies.breaker, dependencies.plans);
  const completions = new CompletionService({
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    router,
    calls: dependencies.calls,
    ledger: dependencies.ledger,
    hub: dependencies.hub,
    journal: dependencies.journal,
  });
  const admission = new Admission({
    pool: dependencies.pool,
    limits: dependencies.rateLimits,
    ledger: dependencies.ledger,
  });
  return { router, completions, admission, conversations: dependencies.conversations };
}

/**
 * Google login when GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET and TOKEN_ENCRYPTION_KEY are set (then the process has
 * the token store the workspace tools use too, `dependencies.google`); else why not.
 */
function googleLogin(
  dependencies: AgentAppDependencies,
  keys: ApiKeyService,
): { google: GoogleLogin | null; googleUnavailable: string } {
  const { settings } = dependencies;
  if (!settings.GOOGLE_CLIENT_ID || !settings.GOOGLE_CLIENT_SECRET) {
    return {
      google: null,
      googleUnavailable: 'Google login is not configured: set GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET',
    };
  }
  if (!settings.TOKEN_ENCRYPTION_KEY || !dependencies.google) {
    return {
      google: null,
      googleUnavailable: 'Google login needs TOKEN_ENCRYPTION_KEY (refresh tokens are stored encrypted with it)',
    };
  }
  const google = new GoogleLogin({ pool: dependencies.pool, keys, accounts: dependencies.google });
  return { google, googleUnavailable: '' };
}

/**
 * Where the console links workflows: TEMPORAL_UI_URL, else the Web UI of the dev server `npm start` runs
 * (`--ui-port`, TEMPORAL_UI_PORT, 8233 by default). The test platform's dev server is headless: the links have the
 * right shape and lead nowhere there.
 */
function temporalUiUrl(settings: Settings, environment: Record<string, string | undefined>): string {
  return settings.TEMPORAL_UI_URL ?? `http://127.0.0.1:${environment.TEMPORAL_UI_PORT || 8233}`;
}

function refererOrigin(referer: string): string {
  try {
    return referer ? new URL(referer).origin : '';
  } catch {
    return '';
  }
}

/** Counts requests under `perIpLimitedPrefixes` per client IP; a 429 with Retry-After past the limit. */
function limitPerIp(limits: RateLimits, perMinute: number): Koa.Middleware {
  return async (context, next) => {
    if (perIpLimitedPrefixes.some((prefix) => context.path.startsWith(prefix))) {
      const subject: Subject = {
        key: `agents-ip:${context.ip}`,
        limits: { per_minute: perMinute, per_hour: null, per_day: null },
        scope: `requests per IP to ${perIpLimitedPrefixes.join(', ')}`,
      };
      await limits.enforce(context, subject);
    }
    await next();
  };
}
