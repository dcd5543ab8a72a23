/**
 * createAgentApp(deps): the agent service's Koa app (spec agent-service-interface.md), without listening. It runs on
 * the gateway's core: the same users, keys and credits, the same conversation store, the completions router for
 * every model call, the chat-turn workflow and tool runtime. Middleware order: request log, errors, the per-IP limit
 * (spec 8), webhooks that sign their raw body, body parser, caller authentication, then each area's routes.
 *
 * Areas (one folder each under api/agents/routes/): auth (logins, linking, keys), agents (catalogue and custom
 * agents), chat (routed streaming chat, agent loops, approvals, history), memory, billing.
 */
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import type { Settings } from '../../config/settings.ts';
import { authenticateCaller, type CallerState, type WebSessionResolver } from '../auth.ts';
import { errorRenderer } from '../errors.ts';
import type { AppDependencies } from '../gateway/app.ts';
import { Metrics, requestObserver } from '../observability.ts';
import type { RateLimits, Subject } from '../rate-limit.ts';
import { ApiKeyService } from '../services/apikeys/service.ts';
import { UsageService } from '../services/usage/service.ts';
import { historyRoutes } from './routes/history/routes.ts';

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
  const { logger, settings } = dependencies;
  const app = new Koa();
  app.proxy = true;
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET') return;
    logger.error({ err: error }, 'response error');
  });
  const metrics = dependencies.metrics ?? new Metrics();
  app.use(requestObserver(logger, metrics));
  app.use(errorRenderer(logger));
  if (dependencies.rateLimits && settings.AGENT_IP_LIMIT_PER_MINUTE > 0) {
    app.use(limitPerIp(dependencies.rateLimits, settings.AGENT_IP_LIMIT_PER_MINUTE));
  }

  const open = new Router();
  open.get('/health', (context) => {
    context.body = { status: 'ok', service: 'agents', version: dependencies.version };
  });
  open.get('/metrics', async (context) => {
    context.type = metrics.registry.contentType;
    context.body = await metrics.registry.metrics();
  });
  app.use(open.routes()).use(open.allowedMethods({ throw: true }));

  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '12mb', encoding: 'utf-8' }));
  const keys = new ApiKeyService({
    orm: dependencies.orm,
    pool: dependencies.pool,
    masterKey: dependencies.masterKey,
    accounts: dependencies.accounts,
    principals: dependencies.principals,
  });
  const sessions: WebSessionResolver | null = null;
  const isAllowed = allowedOrigins(settings);
  const routes = new Router<CallerState>();
  routes.use(
    authenticateCaller(keys, sessions, (context) => {
      const origin = context.get('origin') || refererOrigin(context.get('referer'));
      return origin !== '' && isAllowed(origin, context.origin);
    }),
  );
  const { conversations, pool } = dependencies;
  const usage = new UsageService({ pool, conversations, catalogue: dependencies.catalogue.catalogue });
  routes.use(historyRoutes({ conversations, usage }).routes());
  app.use(routes.routes()).use(routes.allowedMethods({ throw: true }));
  return app;
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
