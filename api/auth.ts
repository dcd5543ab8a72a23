/**
 * Bearer-key authentication. The gateway checks a key wherever one is sent (`identifyKey`, before any route: a sent
 * credential must be valid on every path, `/health` and `/v1/models` included, or it is a 401) and puts its
 * principal on `ctx.state.principal`; routes that need a caller add `requireKey`, and the session chat takes a
 * request without any key as a guest.
 */
import type { Middleware } from 'koa';
import { ApiError, errorDialect } from './errors.ts';
import type { ApiKeyService, Principal } from './services/apikeys/service.ts';
import type { ServerTiming } from './server-timing.ts';
import { withCaller } from './tracing.ts';

export interface AuthState {
  principal: Principal;
  /** Stage timings of this request (set by the request observer), for Server-Timing. */
  timing?: ServerTiming;
}

/** On every request: a key that is sent must be valid (401 otherwise); its principal goes on the state. */
export function identifyKey(keys: ApiKeyService): Middleware<Partial<AuthState>> {
  return async (context, next) => {
    const header = context.get('authorization');
    // The Messages door takes Anthropic's `x-api-key` too (what its SDKs send), when no Authorization is sent.
    const apiKey = !header && errorDialect(context.path) === 'anthropic' ? context.get('x-api-key') : '';
    if (header || apiKey) {
      const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : ([apiKey, apiKey] as const);
      if (!match) throw new ApiError('authentication_error', 'Send Authorization: Bearer <API_KEY>');
      context.state.timing?.mark('receive');
      const principal = await keys.authenticate(match[1]!);
      if (!principal) throw new ApiError('authentication_error', 'Invalid or revoked API key');
      context.state.timing?.mark('auth');
      context.state.principal = principal;
    }
    // Traced requests carry their caller from here on (api/tracing.ts); otherwise this is next().
    await withCaller(context.state.principal, next);
  };
}

/** A route that needs a caller: 401 when the request sent no key (a sent one was checked by `identifyKey`). */
export function requireKey(): Middleware<AuthState> {
  return async (context, next) => {
    if (!context.state.principal) {
      throw new ApiError('authentication_error', 'Missing API key: send Authorization: Bearer <API_KEY>');
    }
    await next();
  };
}

/** Resolves a web session cookie to its user's principal (api/services/logins/: magic link and OAuth logins). */
export interface WebSessionResolver {
  readonly cookieName: string;
  principal(token: string): Promise<Principal | null>;
}

export interface CallerState extends Partial<AuthState> {
  /** How the caller proved who they are: a web session cookie, or an API key. */
  via?: 'cookie' | 'key';
}

/**
 * The agent service's authentication: an `Authorization: Bearer te_…` key, `X-API-Key` on `/api/v1/*` (spec 5), the A2A
 * endpoints `/a2a` and `/a2a/*` (their card declares it) and `/automation/*` (what automation tools send), or
 * the web session cookie. A credential that is sent must be valid (401 otherwise); a request with none goes on
 * without a principal, and each route decides (`requireCaller`). A cookie-authenticated request that changes
 * something (any method but GET, HEAD, OPTIONS) must come from an allowed origin (`sameOrigin`): the cookie is
 * SameSite=Lax, which already keeps it off cross-site POSTs in browsers that honour it, and the origin check closes
 * the rest (older browsers, same-site subdomains). Key-authenticated requests carry no ambient credential, so no check.
 */
export function authenticateCaller(
  keys: ApiKeyService,
  sessions: WebSessionResolver | null,
  sameOrigin: (context: Parameters<Middleware>[0]) => boolean,
): Middleware<CallerState> {
  return async (context, next) => {
    const header = context.get('authorization');
    const apiKey = /^\/(?:api\/v1\/|a2a(?:\/|$)|automation\/)/.test(context.path) ? context.get('x-api-key') : '';
    if (header || apiKey) {
      const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : ([apiKey, apiKey] as const);
      if (!match) throw new ApiError('authentication_error', 'Send Authorization: Bearer <API_KEY>');
      const principal = await keys.authenticate(match[1]!);
      if (!principal) throw new ApiError('authentication_error', 'Invalid or revoked API key');
      context.state.principal = principal;
      context.state.via = 'key';
      return withCaller(principal, next);
    }
    const token = sessions ? context.cookies.get(sessions.cookieName) : undefined;
    if (token && sessions) {
      const principal = await sessions.principal(token);
      if (principal) {
        if (!['GET', 'HEAD', 'OPTIONS'].includes(context.method) && !sameOrigin(context)) {
          throw new ApiError(
            'permission_denied',
            'Cross-site request refused: a cookie-authenticated request must come from this service’s own origin',
          );
        }
        context.state.principal = principal;
        context.state.via = 'cookie';
      }
    }
    return withCaller(context.state.principal, next);
  };
}

/**
 * This service's origin as the request reached it (`protocol://host`; behind a trusted proxy, from its
 * X-Forwarded-Proto/Host: api/forwarding.ts). Not Koa's `ctx.origin`: in Koa 3 that is the request's Origin header.
 */
export function serviceOrigin(context: { protocol: string; host: string }): string {
  return `${context.protocol}://${context.host}`;
}

/** The caller's principal, or a 401 naming the ways to log in. */
export function requireCaller(state: CallerState): Principal {
  if (!state.principal) {
    throw new ApiError(
      'authentication_error',
      'Log in (POST /auth/register, or GET /auth/google) or send Authorization: Bearer <API_KEY>',
    );
  }
  return state.principal;
}
