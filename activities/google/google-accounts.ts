/**
 * Users' Google accounts (`oauth_identities`, provider `google`): what the login stores, and the access tokens the
 * workspace tools call Google with. One implementation for the login (api/services/logins/google.ts) and the tools
 * (activities/google/google-api.ts), here in activities/ because the tools run in activities.
 *
 * Stored per identity: the granted scopes, the refresh token and the current access token with its expiry, both
 * tokens encrypted (AES-256-GCM, ./token-cipher.ts), and `revoked_at` once Google refused the refresh token.
 * A user's identity is the one they logged in with last.
 *
 * Access tokens:
 * - A stored access token is used until a minute before its expiry; past that, or when Google answered 401 to it (the
 *   caller names the token it rejected), it is refreshed at the token endpoint the provider's discovery names
 *   (./oauth-client.ts) and the new one stored, encrypted, with its expiry.
 * - Two tools refreshing at once refresh once: the refresh runs under the identity row's lock
 *   (`select … for update`), and whoever gets the lock second finds a fresh token the first stored (one that is not
 *   the token it saw rejected, and not expiring) and uses it.
 * - Google refusing the refresh token (`invalid_grant`: the user revoked the app's access, or the token expired)
 *   marks the identity revoked: both tokens are deleted and `revoked_at` set, `GET /auth/google/status` says not
 *   connected, the agent check sends the user to `/auth/google`, and the tool answers `GoogleNotConnectedError`
 *   (the model tells the user to log in again). A new login clears the mark.
 * - The provider unreachable (discovery, a 5xx, a network failure) leaves everything as it was: the caller may retry.
 */
import type { PoolClient } from 'pg';
import type { Pool } from '../../db/pool.ts';
import { agentsEnabledBy, workspaceScopes } from './scopes.ts';
import type { GoogleOAuthClient } from './oauth-client.ts';
import { isInvalidGrant } from './oauth-client.ts';
import type { TokenCipher } from './token-cipher.ts';
import type { WorkspaceName } from '../../common/agents.ts';

const provider = 'google';

/** An access token this close to its expiry is refreshed before use. */
const expiryMarginMs = 60_000;

/** `GET /auth/google/status`. */
export interface GoogleStatus {
  connected: boolean;
  email: string | null;
  scopes: string[];
  workspace_scopes_granted: boolean;
  missing_scopes: string[];
  /** Which workspace agents the granted scopes enable (all false when not connected). */
  agents: Record<WorkspaceName, boolean>;
}

/** The user has no usable Google login: never logged in, or Google revoked it (`revoked`). */
export class GoogleNotConnectedError extends Error {
  readonly revoked: boolean;
  constructor(revoked: boolean) {
    super(
      revoked
        ? 'Google refused the stored login (access was revoked or expired)'
        : 'this account has not connected Google',
    );
    this.name = 'GoogleNotConnectedError';
    this.revoked = revoked;
  }
}

/** What a login hands over to be stored. */
export interface GoogleLoginTokens {
  /** A new identity's id (ignored when the identity exists). */
  id: string;
  userId: string;
  subject: string;
  email: string;
  scopes: string[];
  refreshToken: string | undefined;
  accessToken: string | undefined;
  /** Seconds the access token lives, as the token endpoint said. */
  expiresIn: number | undefined;
}

interface IdentityRow {
  id: string;
  refresh_token_encrypted: string | null;
  access_token_encrypted: string | null;
  access_token_expires_at: Date | null;
  revoked_at: Date | null;
}

export class GoogleAccounts {
  private readonly pool: Pool;
  private readonly cipher: TokenCipher;
  readonly oauth: GoogleOAuthClient;

  constructor(options: { pool: Pool; cipher: TokenCipher; oauth: GoogleOAuthClient }) {
    this.pool = options.pool;
    this.cipher = options.cipher;
    this.oauth = options.oauth;
  }

  /**
   * Stores a login: the identity (by provider and subject) joined to `userId`, its e-mail and scopes, the tokens
   * encrypted; a login that brought no refresh token keeps the stored one. Clears a revocation.
   */
  async saveLogin(login: GoogleLoginTokens): Promise<void> {
    const refresh = login.refreshToken ? this.cipher.encrypt(login.refreshToken) : null;
    const access = login.accessToken ? this.cipher.encrypt(login.accessToken) : null;
    const expiresAt = access ? expiry(login.expiresIn) : null;
    await this.pool.query(
      `insert into oauth_identities (id, user_id, provider, subject, email, scopes, refresh_token_encrypted,
                                     access_token_encrypted, access_token_expires_at, revoked_at, created_at,
                                     updated_at)
       values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, null, now(), now())
       on conflict (provider, subject) do update set
         email = excluded.email, scopes = excluded.scopes, updated_at = now(), revoked_at = null,
         refresh_token_encrypted = coalesce(excluded.refresh_token_encrypted, oauth_identities.refresh_token_encrypted),
         access_token_encrypted = excluded.access_token_encrypted,
         access_token_expires_at = excluded.access_token_expires_at`,
      [
        login.id,
        login.userId,
        provider,
        login.subject,
        login.email,
        JSON.stringify(login.scopes),
        refresh,
        access,
        expiresAt,
      ],
    );
  }

  /** The account an identity's subject belongs to, if it logged in before. */
  async userOfSubject(subject: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ user_id: string }>(
      'select user_id from oauth_identities where provider = $1 and subject = $2',
      [provider, subject],
    );
    return rows[0]?.user_id;
  }

  /**
   * An access token for the user's Google account: the stored one while it is valid, else a refreshed one (see the
   * file comment). `rejected`: a token Google just answered 401 to, which must not be answered again. Throws
   * `GoogleNotConnectedError` (no login, or Google revoked it now or before), `ProviderUnreachableError`.
   */
  async accessToken(userId: string, options: { rejected?: string } = {}): Promise<string> {
    const { rows } = await this.pool.query<IdentityRow>(
      `select id, refresh_token_encrypted, access_token_encrypted, access_token_expires_at, revoked_at
       from oauth_identities where user_id = $1 and provider = $2 order by updated_at desc limit 1`,
      [userId, provider],
    );
    const identity = rows[0];
    if (!identity?.refresh_token_encrypted) throw new GoogleNotConnectedError(!!identity?.revoked_at);
    const stored = this.usable(identity, options.rejected);
    if (stored) return stored;
    return this.refresh(identity.id, options.rejected);
  }

  /** The stored access token, when it is neither expiring nor the one Google rejected. */
  private usable(identity: IdentityRow, rejected: string | undefined): string | undefined {
    if (!identity.access_token_encrypted || !identity.access_token_expires_at) return undefined;
    if (identity.access_token_expires_at.getTime() - expiryMarginMs <= Date.now()) return undefined;
    const token = this.cipher.decrypt(identity.access_token_encrypted);
    return token === rejected ? undefined : token;
  }

  private async refresh(identityId: string, rejected: string | undefined): Promise<string> {
    const client = await this.pool.connect();
    let outcome: { token: string } | { refused: GoogleNotConnectedError };
    try {
      await client.query('begin');
      outcome = await this.refreshLocked(client, identityId, rejected);
      // Committed in both cases: a refused refresh token is marked revoked for good.
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    if ('refused' in outcome) throw outcome.refused;
    return outcome.token;
  }

  /** Within the transaction: the identity locked, then a token someone else stored, a refreshed one, or why not. */
  private async refreshLocked(
    client: PoolClient,
    identityId: string,
    rejected: string | undefined,
  ): Promise<{ token: string } | { refused: GoogleNotConnectedError }> {
    const { rows } = await client.query<IdentityRow>(
      `select id, refresh_token_encrypted, access_token_encrypted, access_token_expires_at, revoked_at
       from oauth_identities where id = $1 for update`,
      [identityId],
    );
    const identity = rows[0];
    if (!identity?.refresh_token_encrypted) return { refused: new GoogleNotConnectedError(!!identity?.revoked_at) };
    // Someone else refreshed while this waited for the lock.
    const fresh = this.usable(identity, rejected);
    if (fresh) return { token: fresh };
    let answer: Awaited<ReturnType<GoogleOAuthClient['refresh']>>;
    try {
      answer = await this.oauth.refresh(this.cipher.decrypt(identity.refresh_token_encrypted));
    } catch (error) {
      if (!isInvalidGrant(error)) throw error;
      await client.query(
        `update oauth_identities set refresh_token_encrypted = null, access_token_encrypted = null,
           access_token_expires_at = null, revoked_at = now(), updated_at = now()
         where id = $1`,
        [identityId],
      );
      return { refused: new GoogleNotConnectedError(true) };
    }
    const scopes = answer.scope?.split(/\s+/).filter(Boolean);
    await client.query(
      `update oauth_identities set access_token_encrypted = $2, access_token_expires_at = $3,
         refresh_token_encrypted = coalesce($4, refresh_token_encrypted),
         scopes = coalesce($5::jsonb, scopes)
       where id = $1`,
      [
        identityId,
        this.cipher.encrypt(answer.access_token),
        expiry(answer.expiresIn()),
        // Google keeps the refresh token; a provider that rotates it sends a new one, which replaces the old.
        answer.refresh_token ? this.cipher.encrypt(answer.refresh_token) : null,
        scopes?.length ? JSON.stringify(scopes) : null,
      ],
    );
    return { token: answer.access_token };
  }
}

/** Whether the user's Google account is connected, which scopes it granted, and which workspace agents they enable. */
export async function googleStatus(pool: Pool, userId: string): Promise<GoogleStatus> {
  const { rows } = await pool.query<{ email: string; scopes: string[]; refresh_token_encrypted: string | null }>(
    `select email, scopes, refresh_token_encrypted from oauth_identities where user_id = $1 and provider = $2
     order by updated_at desc limit 1`,
    [userId, provider],
  );
  const identity = rows[0];
  const connected = !!identity?.refresh_token_encrypted;
  const scopes = identity?.scopes ?? [];
  const missing = workspaceScopes.filter((scope) => !scopes.includes(scope));
  return {
    connected,
    email: identity?.email ?? null,
    scopes,
    workspace_scopes_granted: connected && missing.length === 0,
    missing_scopes: missing,
    agents: agentsEnabledBy(scopes, connected),
  };
}

/** When a token living `seconds` from now expires (an hour when the provider did not say, as Google's do). */
function expiry(seconds: number | undefined): Date {
  return new Date(Date.now() + (seconds ?? 3600) * 1000);
}
