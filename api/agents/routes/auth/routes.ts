/**
 * Logins, linking and keys of the agent service (spec 4.3, 4.11, 5). docs/agent-service.md, "Agent service: login and
 * accounts".
 *
 * Public (no login needed, and why):
 * - `POST /auth/register {email}` → 200 `{sent: true}` whatever the address (no account enumeration); mails a
 *   magic link valid 15 minutes. 429 past 5 mails per address per hour (20 per day).
 * - `GET /auth/verify?token=` uses the link once: creates the account on first login (free plan), sets the session
 *   cookie, then redirects (302) to AGENT_PUBLIC_URL or `/`; a client that prefers JSON (`Accept: application/json`)
 *   gets 200 `{logged_in: true, user}` instead. A used, forged or expired token: 400, and no session.
 * - `POST /auth/logout` ends the cookie's session server-side and clears the cookie (200 either way: logging out
 *   twice is not an error). Cookie-authenticated, so the CSRF origin check applies.
 * - `GET /auth/me`: `{logged_in: false, ai_name}` for an anonymous caller (a page asks it to decide what to show);
 *   `admin: true` for a logged-in admin (the operator console is theirs: api/services/admin/operators.ts).
 * - `GET /auth/google` and its callback `GET /auth/google/callback` (the login itself; 503 without GOOGLE_CLIENT_ID).
 * Login required: `GET /auth/google/status` (`{connected, email, scopes, workspace_scopes_granted, missing_scopes,
 * agents}`: which workspace agents the granted scopes enable), `GET /link/code`, `POST /link/verify`, `POST /api/keys`,
 * `GET /api/keys`.
 *
 * Links built for a browser (the magic link, the OAuth redirect URI) use AGENT_PUBLIC_URL; without it, the request's
 * own origin, but only when that is a loopback address or one of AGENT_ALLOWED_ORIGINS: a Host (or
 * X-Forwarded-Host) header is the caller's to choose, and a magic link pointing at an attacker's host would hand them
 * the token.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import type { CreditLedger } from '../../../../activities/credits/credit-ledger.ts';
import type { Settings } from '../../../../config/settings.ts';
import type { Pool } from '../../../../db/pool.ts';
import { requireCaller, serviceOrigin, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import type { ApiKeyService, Principal } from '../../../services/apikeys/service.ts';
import type { Linking } from '../../../services/chat/linking.ts';
import { googleStatus } from '../../../../activities/google/google-accounts.ts';
import { oauthStateCookie, oauthStateLifetimeMs, type GoogleLogin } from '../../../services/logins/google.ts';
import { magicLinkSubject, type MagicLinks } from '../../../services/logins/magic-links.ts';
import {
  clearSessionCookie,
  secureCookies,
  setCookie,
  setSessionCookie,
  type WebSessions,
} from '../../../services/logins/web-sessions.ts';
import { createKeyBodySchema, linkVerifyBodySchema, registerBodySchema, verifyQuerySchema } from './schema.ts';
import { adminEmailSet, isAdminAccount } from '../../../services/admin/operators.ts';

/** The session key of each user's home conversation in the agent service: what `/link` codes join to. */
export const homeSessionKey = 'web:home';

/** The origin links for a browser are built on (see the file comment); team invitations use it too. */
export function linkBase(settings: Settings, context: Context): string {
  if (settings.AGENT_PUBLIC_URL) return settings.AGENT_PUBLIC_URL;
  const own = serviceOrigin(context);
  const loopback = ['localhost', '127.0.0.1', '[::1]', '::1'].includes(context.hostname);
  const allowed = settings.AGENT_ALLOWED_ORIGINS.some((origin) => new URL(origin).origin === own);
  if (loopback || allowed) return own;
  throw new ApiError(
    'service_unavailable',
    'Set AGENT_PUBLIC_URL: links for a browser are only built on this request’s host when it is local',
  );
}

export interface AuthRouteDependencies {
  settings: Settings;
  pool: Pool;
  keys: ApiKeyService;
  sessions: WebSessions;
  magicLinks: MagicLinks;
  /** Null when GOOGLE_CLIENT_ID (or its secret, or TOKEN_ENCRYPTION_KEY) is missing: `unavailable` says which. */
  google: GoogleLogin | null;
  googleUnavailable: string;
  ledger: CreditLedger;
  conversations: ConversationStore;
  linking: Linking;
  limits: RateLimits | undefined;
  log: (fields: Record<string, unknown>, message: string) => void;
}

export function authRoutes(dependencies: AuthRouteDependencies) {
  const { settings, sessions, magicLinks, keys, conversations, linking } = dependencies;
  const router = new Router<CallerState>();
  const secure = (context: Context) => secureCookies(context, settings.AGENT_PUBLIC_URL);
  const publicBase = (context: Context): string => linkBase(settings, context);
  const adminEmails = adminEmailSet(settings.ADMIN_EMAILS);

  /** After a login: JSON for a client that prefers it, else a redirect to the front page. */
  const loggedIn = (context: Context, user: { id: string; email: string | null; plan: string }) => {
    if (context.accepts('html', 'json') === 'json') {
      context.body = { logged_in: true, user };
      return;
    }
    context.redirect(settings.AGENT_PUBLIC_URL ?? '/');
  };

  const account = (principal: Principal): string => {
    if (principal.operator) {
      throw new ApiError('invalid_request', 'The operator key has no account: log in, or use a user’s key');
    }
    return principal.userId;
  };

  router.post('/auth/register', async (context) => {
    const parsed = registerBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const base = publicBase(context);
    if (dependencies.limits) await dependencies.limits.enforce(context, magicLinkSubject(parsed.data.email));
    try {
      await magicLinks.send(parsed.data.email, base);
    } catch (error) {
      dependencies.log({ err: error }, 'login e-mail could not be sent');
      throw new ApiError('service_unavailable', 'The login e-mail could not be sent; try again later');
    }
    context.body = {
      sent: true,
      message: 'If the address can receive mail, a login link is on its way; it works once, within 15 minutes.',
    };
  });

  router.get('/auth/verify', async (context) => {
    const parsed = verifyQuerySchema.safeParse(context.query);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const email = await magicLinks.consume(parsed.data.token);
    if (!email) {
      throw new ApiError(
        'invalid_request',
        'This login link is invalid, already used or expired: ask for a new one (POST /auth/register)',
      );
    }
    const user = await keys.ensureUser({ email });
    const session = await sessions.create(user.id, 'magic_link');
    setSessionCookie(context, session.token, session.expiresAt, secure(context));
    loggedIn(context, { id: user.id, email: user.email ?? null, plan: user.plan });
  });

  router.post('/auth/logout', async (context) => {
    const token = context.cookies.get(sessions.cookieName);
    const ended = token ? await sessions.revoke(token) : false;
    clearSessionCookie(context, secure(context));
    context.body = { logged_out: true, session_ended: ended };
  });

  router.get('/auth/me', async (context) => {
    const principal = context.state.principal;
    if (!principal) {
      context.body = { logged_in: false, ai_name: settings.AGENT_AI_NAME };
      return;
    }
    if (principal.operator) {
      context.body = {
        logged_in: true,
        via: context.state.via,
        operator: true,
        user: null,
        credits: null,
        linked_apps: [],
        ai_name: settings.AGENT_AI_NAME,
      };
      return;
    }
    const { rows } = await dependencies.pool.query<{ email: string | null; plan: string; role: string }>(
      'select email, plan, role from users where id = $1',
      [principal.userId],
    );
    const balance = await dependencies.ledger.balance(principal.userId);
    if (!rows[0] || !balance) throw new ApiError('not_found', 'This account no longer exists');
    const linked = await dependencies.conversations.linkedChats(`user:${principal.userId}`);
    context.body = {
      logged_in: true,
      via: context.state.via,
      user: { id: principal.userId, email: rows[0].email, plan: rows[0].plan },
      // The operator console is theirs: an admin's browser (the role works through the cookie only, not a key).
      ...(context.state.via === 'cookie' && isAdminAccount(rows[0], adminEmails) ? { admin: true as const } : {}),
      credits: { balance: balance.available, held: balance.held, used: balance.used },
      linked_apps: [...new Set(linked.map((chat) => chat.platform))],
      ai_name: settings.AGENT_AI_NAME,
    };
  });

  const google = (): GoogleLogin => {
    if (!dependencies.google) throw new ApiError('service_unavailable', dependencies.googleUnavailable);
    return dependencies.google;
  };

  router.get('/auth/google', async (context) => {
    const login = google();
    const { url, state } = await login.start(new URL('/auth/google/callback', publicBase(context)).href);
    setCookie(context, oauthStateCookie, state, {
      maxAgeSeconds: oauthStateLifetimeMs / 1000,
      path: '/auth/google',
      secure: secure(context),
    });
    context.redirect(url.href);
  });

  router.get('/auth/google/callback', async (context) => {
    const login = google();
    // The URL as registered at the provider (the redirect URI), with the query the provider sent back.
    const callback = new URL('/auth/google/callback', publicBase(context));
    callback.search = context.querystring;
    const stateCookie = context.cookies.get(oauthStateCookie);
    setCookie(context, oauthStateCookie, '', { maxAgeSeconds: 0, path: '/auth/google', secure: secure(context) });
    const { userId } = await login.finish(callback, stateCookie);
    const user = await keys.ensureUser({ userId });
    const session = await sessions.create(userId, 'google');
    setSessionCookie(context, session.token, session.expiresAt, secure(context));
    loggedIn(context, { id: user.id, email: user.email ?? null, plan: user.plan });
  });

  router.get('/auth/google/status', async (context) => {
    const userId = account(requireCaller(context.state));
    context.body = await googleStatus(dependencies.pool, userId);
  });

  const homeSession = async (userId: string) => {
    const owner = `user:${userId}`;
    return { ...(await conversations.openSession(owner, homeSessionKey, 'web')), owner };
  };

  router.get('/link/code', async (context) => {
    const userId = account(requireCaller(context.state));
    const issued = await linking.deepLinks(await homeSession(userId));
    context.body = {
      code: issued.code,
      expires_at: issued.expires_at,
      expires_in: Math.round((Date.parse(issued.expires_at!) - Date.now()) / 1000),
      links: issued.links,
      instructions: `Send "/link ${issued.code}" to the LINE or Telegram bot within 10 minutes to link that chat to your account.`,
    };
  });

  router.post('/link/verify', async (context) => {
    const userId = account(requireCaller(context.state));
    const parsed = linkVerifyBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const outcome = await linking.join(await homeSession(userId), { kind: 'redeem', code: parsed.data.code });
    switch (outcome.status) {
      case 'linked':
      case 'already':
        context.body = {
          linked: true,
          already: outcome.status === 'already',
          channel: outcome.target?.channel ?? null,
          message: outcome.message,
        };
        return;
      case 'limited':
        throw new ApiError('rate_limit_exceeded', outcome.message, { retryAfterSeconds: 3600 });
      case 'busy':
        throw new ApiError('conflict', outcome.message);
      case 'foreign':
        throw new ApiError('permission_denied', outcome.message);
      default:
        throw new ApiError('invalid_request', outcome.message, { param: 'code' });
    }
  });

  router.post('/api/keys', async (context) => {
    const userId = account(requireCaller(context.state));
    const parsed = createKeyBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { key, secret } = await keys.create(userId, parsed.data.name ?? null);
    context.status = 201;
    context.body = {
      id: key.id,
      name: key.name,
      key: secret,
      key_preview: key.preview,
      created_at: key.createdAt.toISOString(),
      message: 'Keep this key now: it is shown only once.',
    };
  });

  router.get('/api/keys', async (context) => {
    const userId = account(requireCaller(context.state));
    const list = await keys.list(userId);
    context.body = {
      keys: list.map((key) => ({
        id: key.id,
        name: key.name,
        key_preview: key.preview,
        created_at: key.createdAt.toISOString(),
        last_used_at: key.lastUsedAt?.toISOString() ?? null,
      })),
    };
  });

  // Revocation: the key fails on its next use, on every replica (the principal cache hears it from the database).
  router.delete('/api/keys/:id', async (context) => {
    const userId = account(requireCaller(context.state));
    if (!(await keys.revoke(userId, context.params.id!)))
      throw new ApiError('not_found', `No API key ${context.params.id}`);
    context.body = { id: context.params.id, deleted: true };
  });

  return router;
}
