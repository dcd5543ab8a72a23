/**
 * Google login and workspace consent (spec 4.3) through openid-client (v6), against GOOGLE_ISSUER (Google's by
 * default; any OpenID provider with discovery at `<issuer>/.well-known/openid-configuration`, which is how the tests
 * run a real one, oidc-provider, on loopback).
 *
 * - Start (`GET /auth/google`): a random `state`, `nonce` and PKCE verifier (S256). The state's SHA-256 keys a
 *   server-side record (`oauth_login_states`, 10 minutes, used once) holding the nonce and verifier; the state is
 *   also set in a short-lived cookie (`tessera_oauth_state`, Path=/auth/google), and the callback wants both to
 *   agree, so a callback URL started in another browser (login CSRF) logs nobody in. The request asks for
 *   `openid email profile` plus the workspace scopes, with `access_type=offline&prompt=consent` (Google's way to
 *   get a refresh token every time).
 * - Callback: the record is deleted as it is read (`delete … returning`), then openid-client checks the state,
 *   exchanges the code with the verifier, and validates the ID token (signature, issuer, audience, expiry, nonce).
 *   The e-mail must be verified (from the ID token, else from userinfo). The account is the one this Google
 *   account logged into before, else the account with that e-mail (joined), else a new one (free plan, through
 *   ApiKeyService.ensureUser). The granted scopes, the refresh token and the access token (encrypted) are stored by
 *   the token store the workspace tools use (activities/google/google-accounts.ts); a login that grants no new
 *   refresh token keeps the old one, and a login clears an earlier revocation.
 * - The provider's configuration (discovery, cached; loopback-only plain http) is activities/google/oauth-client.ts,
 *   shared with the tools' token refresh.
 */
import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import { normalizeEmail } from '../../../common/email.ts';
import type { Pool } from '../../../db/pool.ts';
import type { GoogleAccounts } from '../../../activities/google/google-accounts.ts';
import { ProviderUnreachableError } from '../../../activities/google/oauth-client.ts';
import { loginScopes, workspaceScopes } from '../../../activities/google/scopes.ts';
import { ApiError } from '../../errors.ts';
import { newId, type ApiKeyService } from '../apikeys/service.ts';

export { loginScopes, workspaceScopes };
export const oauthStateCookie = 'tessera_oauth_state';
export const oauthStateLifetimeMs = 10 * 60_000;

const provider = 'google';
const hashState = (state: string) => createHash('sha256').update(state).digest('hex');

export class GoogleLogin {
  private readonly pool: Pool;
  private readonly keys: ApiKeyService;
  private readonly accounts: GoogleAccounts;

  constructor(options: { pool: Pool; keys: ApiKeyService; accounts: GoogleAccounts }) {
    this.pool = options.pool;
    this.keys = options.keys;
    this.accounts = options.accounts;
  }

  /** The authorization URL to redirect to, and the state to bind to the browser. */
  async start(redirectUri: string): Promise<{ url: URL; state: string }> {
    const config = await this.config();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    await this.pool.query(
      `insert into oauth_login_states (state_hash, provider, nonce, code_verifier, expires_at, created_at)
       values ($1, $2, $3, $4, $5, now())`,
      [hashState(state), provider, nonce, codeVerifier, new Date(Date.now() + oauthStateLifetimeMs)],
    );
    await this.pool.query(`delete from oauth_login_states where expires_at < now() - interval '1 hour'`);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: [...loginScopes, ...workspaceScopes].join(' '),
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      access_type: 'offline',
      prompt: 'consent',
    });
    return { url, state };
  }

  /**
   * Completes a login from the callback's URL (as registered: `redirectUri` plus the query the provider sent),
   * with the state cookie the browser carried. Answers the user it logged in. 400 for a bad or stale state, a
   * provider error, or an answer that fails validation; nothing is stored then.
   */
  async finish(callbackUrl: URL, stateCookie: string | undefined): Promise<{ userId: string; email: string }> {
    const state = callbackUrl.searchParams.get('state');
    if (!state || !stateCookie || state !== stateCookie) {
      throw new ApiError('invalid_request', 'This login was not started in this browser, or it expired: start again');
    }
    const { rows } = await this.pool.query<{ nonce: string; code_verifier: string }>(
      `delete from oauth_login_states where state_hash = $1 and provider = $2 and expires_at > now()
       returning nonce, code_verifier`,
      [hashState(state), provider],
    );
    const record = rows[0];
    if (!record) throw new ApiError('invalid_request', 'Unknown or expired login state: start the login again');
    const config = await this.config();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: record.code_verifier,
        expectedState: state,
        expectedNonce: record.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      throw loginError(error);
    }
    const idClaims = tokens.claims()!;
    let email = typeof idClaims.email === 'string' ? idClaims.email : undefined;
    let verified = idClaims.email_verified;
    if (email === undefined || verified === undefined) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub).catch((error: unknown) => {
        throw loginError(error);
      });
      email = info.email;
      verified = info.email_verified;
    }
    if (!email || verified !== true) {
      throw new ApiError('permission_denied', 'The identity provider did not confirm this account’s e-mail address');
    }
    email = normalizeEmail(email);
    const scopes = (tokens.scope ?? [...loginScopes, ...workspaceScopes].join(' ')).split(/\s+/).filter(Boolean);
    const userId = (await this.accounts.userOfSubject(idClaims.sub)) ?? (await this.keys.ensureUser({ email })).id;
    await this.accounts.saveLogin({
      id: newId('oid'),
      userId,
      subject: idClaims.sub,
      email,
      scopes,
      refreshToken: tokens.refresh_token,
      accessToken: tokens.access_token,
      expiresIn: tokens.expiresIn(),
    });
    return { userId, email };
  }

  private async config(): Promise<oidc.Configuration> {
    try {
      return await this.accounts.oauth.config();
    } catch (error) {
      if (error instanceof ProviderUnreachableError) throw new ApiError('upstream_error', error.message);
      throw error;
    }
  }
}

/** The provider's refusal, or an answer that failed validation, as a 400; a network failure as a 502. */
function loginError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const cause = (error as { cause?: unknown }).cause;
  if (error instanceof TypeError && cause) {
    return new ApiError('upstream_error', `The identity provider could not be reached: ${error.message}`);
  }
  const detail =
    error instanceof oidc.AuthorizationResponseError || error instanceof oidc.ResponseBodyError
      ? `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`
      : (error as Error).message;
  return new ApiError('invalid_request', `The login with the identity provider failed (${detail})`);
}
