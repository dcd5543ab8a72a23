/**
 * Web sessions of the agent service (spec 5): after a magic-link or Google login the browser holds the
 * `tessera_session` cookie; the server keeps only the SHA-256 of its value (`web_sessions`), with an expiry
 * (30 days from login, not sliding) and `revoked_at`, set by logout. A cookie whose row is missing, expired or
 * revoked authenticates nothing: the request goes on anonymous (api/auth.ts), so `requireCaller` answers 401.
 *
 * Cookie attributes: HttpOnly (scripts cannot read it), SameSite=Lax (not sent on cross-site POSTs; authenticateCaller
 * adds the Origin check for the rest), Path=/, Max-Age = the session's lifetime, and Secure unless the service is
 * reached on a loopback host or AGENT_PUBLIC_URL is plain http (a browser drops Secure cookies over http).
 * The header is written here rather than through Koa's `cookies.set`, which refuses Secure cookies whenever the
 * request did not arrive over TLS (the usual case behind a TLS-terminating proxy).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { PlanName } from '../../../common/plans.ts';
import { run, type Pool } from '../../../db/pool.ts';
import type { WebSessionResolver } from '../../auth.ts';
import { newId, type CustomLimits, type Principal } from '../apikeys/service.ts';

export const sessionCookieName = 'tessera_session';
export const sessionLifetimeMs = 30 * 24 * 3600_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

const lookup = {
  name: 'web-session-principal',
  text: `select s.user_id, u.plan, u.custom_limits from web_sessions s join users u on u.id = s.user_id
         where s.token_hash = $1 and s.revoked_at is null and s.expires_at > now()`,
};

export class WebSessions implements WebSessionResolver {
  readonly cookieName = sessionCookieName;
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /** A new session for the user: the cookie's value (shown once) and its expiry. */
  async create(userId: string, method: 'magic_link' | 'google'): Promise<{ token: string; expiresAt: Date }> {
    const token = `tss_${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + sessionLifetimeMs);
    await this.pool.query(
      `insert into web_sessions (id, token_hash, user_id, method, created_at, expires_at, revoked_at)
       values ($1, $2, $3, $4, now(), $5, null)`,
      [newId('wses'), hashToken(token), userId, method, expiresAt],
    );
    return { token, expiresAt };
  }

  async principal(token: string): Promise<Principal | null> {
    if (!token.startsWith('tss_') || token.length > 200) return null;
    const [row] = await run<{ user_id: string; plan: PlanName; custom_limits: CustomLimits | null }>(
      this.pool,
      lookup,
      [hashToken(token)],
    );
    return row
      ? { userId: row.user_id, keyId: null, operator: false, plan: row.plan, customLimits: row.custom_limits }
      : null;
  }

  /** Ends the session server-side; false when it was unknown or already ended. */
  async revoke(token: string): Promise<boolean> {
    const result = await this.pool.query(
      'update web_sessions set revoked_at = now() where token_hash = $1 and revoked_at is null',
      [hashToken(token)],
    );
    return result.rowCount === 1;
  }
}

/** Whether cookies set on this request get `Secure` (see the file comment). */
export function secureCookies(context: Context, publicUrl: string | undefined): boolean {
  if (publicUrl && new URL(publicUrl).protocol === 'http:') return false;
  return !['localhost', '127.0.0.1', '[::1]', '::1'].includes(context.hostname);
}

/** Appends a Set-Cookie header; `maxAgeSeconds` 0 deletes the cookie. */
export function setCookie(
  context: Context,
  name: string,
  value: string,
  options: { maxAgeSeconds: number; path: string; secure: boolean },
): void {
  const expires = new Date(options.maxAgeSeconds > 0 ? Date.now() + options.maxAgeSeconds * 1000 : 0);
  const attributes = [
    `${name}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${options.maxAgeSeconds}`,
    `Expires=${expires.toUTCString()}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
  ];
  context.append('Set-Cookie', attributes.join('; '));
}

export function setSessionCookie(context: Context, token: string, expiresAt: Date, secure: boolean): void {
  const maxAgeSeconds = Math.round((expiresAt.getTime() - Date.now()) / 1000);
  setCookie(context, sessionCookieName, token, { maxAgeSeconds, path: '/', secure });
}

export function clearSessionCookie(context: Context, secure: boolean): void {
  setCookie(context, sessionCookieName, '', { maxAgeSeconds: 0, path: '/', secure });
}
