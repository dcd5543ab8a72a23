/**
 * Google's sign-in, played: an OpenID provider at `<simulator>/google` (GOOGLE_ISSUER), so `npm start` without Google
 * credentials and the tests log in through the same openid-client flow as against accounts.google.com.
 *
 * - `GET /google/.well-known/openid-configuration`: the discovery document (Google's endpoints, under the simulator).
 * - `GET /google/o/oauth2/v2/auth?client_id&redirect_uri&response_type=code&scope&state&nonce&code_challenge…`: a
 *   consent page: an e-mail address (any; `login_hint` fills it in) and a box per requested Google API scope, all
 *   ticked (Google's granular consent lets a user untick them). `POST` of that form redirects back with `code`,
 *   `state` and the granted `scope`, or `error=access_denied`.
 * - `POST /google/token` (form; client_secret_post or _basic): `authorization_code` (PKCE checked, code used once,
 *   10 minutes) answers an access token (1 hour), a refresh token when `access_type=offline`, the granted scopes and
 *   an ID token (RS256, `iss`, `aud`, `sub`, `email`, `email_verified`, `nonce`); `refresh_token` answers a new access
 *   token, or `400 {error: invalid_grant, error_description: 'Token has been expired or revoked.'}` for a revoked one.
 * - `POST /google/revoke` (`token=` a refresh or access token): revokes the whole grant, as Google does: its refresh
 *   token and every access token it issued stop working.
 * - `GET /google/v1/userinfo` (bearer) and `GET /google/oauth2/v3/certs` (the JWKS).
 *
 * A client id is accepted with whatever secret it first came with (the simulator has no registry); its redirect URI
 * must be http(s).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { sendJson } from '../../transport.ts';
import { accountOf, type Account } from './accounts.ts';
import { bearerToken, ownOrigin, readBytes } from './http.ts';

export const issuerPath = '/google';
const accessTokenSeconds = 3599;
const codeLifetimeMs = 10 * 60_000;

/** Google names the `email` and `profile` scopes by URL once granted. */
const grantedNames: Record<string, string> = {
  email: 'https://www.googleapis.com/auth/userinfo.email',
  profile: 'https://www.googleapis.com/auth/userinfo.profile',
};

interface Grant {
  account: Account;
  clientId: string;
  scopes: string[];
  refreshToken?: string;
  revoked: boolean;
}

interface AccessToken {
  grant: Grant;
  expiresAt: number;
}

interface PendingCode {
  grant: Grant;
  redirectUri: string;
  nonce?: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
  offline: boolean;
  expiresAt: number;
}

const codes = new Map<string, PendingCode>();
const accessTokens = new Map<string, AccessToken>();
const refreshTokens = new Map<string, Grant>();
const clientSecrets = new Map<string, string>();
let signingKey: Promise<{ privateKey: CryptoKey; jwk: JWK }> | null = null;

function key() {
  signingKey ??= (async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'tessera-simulator-1', alg: 'RS256', use: 'sig' };
    return { privateKey, jwk };
  })();
  return signingKey;
}

/** What an API request's bearer token stands for: the account and its scopes, or why not. */
export function authenticate(
  request: IncomingMessage,
): { ok: true; account: Account; scopes: string[] } | { ok: false; account?: Account } {
  const token = bearerToken(request);
  const entry = token ? accessTokens.get(token) : undefined;
  if (!entry) return { ok: false };
  if (entry.grant.revoked || entry.expiresAt <= Date.now()) {
    entry.grant.account.stats.rejectedTokens += 1;
    return { ok: false, account: entry.grant.account };
  }
  return { ok: true, account: entry.grant.account, scopes: entry.grant.scopes };
}

/** Makes every access token of the account expire now (Google answers 401 to them; refreshing gets new ones). */
export function expireAccessTokens(account: Account): number {
  let expired = 0;
  for (const entry of accessTokens.values()) {
    if (entry.grant.account === account && entry.expiresAt > Date.now()) {
      entry.expiresAt = Date.now() - 1;
      expired += 1;
    }
  }
  return expired;
}

/** Handles the sign-in paths under `/google`; false when the path is not one of them. */
export async function handleOAuth(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  url: URL,
): Promise<boolean> {
  const route = `${request.method} ${path}`;
  switch (route) {
    case 'GET /.well-known/openid-configuration':
      sendJson(response, 200, discovery(`${ownOrigin(request)}${issuerPath}`));
      return true;
    case 'GET /oauth2/v3/certs':
      sendJson(response, 200, { keys: [(await key()).jwk] });
      return true;
    case 'GET /o/oauth2/v2/auth':
      authorizePage(response, url.searchParams);
      return true;
    case 'POST /o/oauth2/v2/auth':
      await authorizeDecision(request, response);
      return true;
    case 'POST /token':
      await token(request, response);
      return true;
    case 'POST /revoke':
      await revoke(request, response, url);
      return true;
    case 'GET /v1/userinfo':
      userinfo(request, response);
      return true;
    default:
      return false;
  }
}

function discovery(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/o/oauth2/v2/auth`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/v1/userinfo`,
    revocation_endpoint: `${issuer}/revoke`,
    jwks_uri: `${issuer}/oauth2/v3/certs`,
    response_types_supported: ['code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    scopes_supported: ['openid', 'email', 'profile'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    claims_supported: ['aud', 'email', 'email_verified', 'exp', 'iat', 'iss', 'name', 'sub'],
    code_challenge_methods_supported: ['plain', 'S256'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
  };
}

const html = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

function pageError(response: ServerResponse, message: string): void {
  const body = `<!doctype html><html><body><h1>Error 400: invalid_request</h1><p>${html(message)}</p></body></html>`;
  response.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
  response.end(body);
}

/** What an authorization request must carry; a message when it does not. */
function authorizationProblem(parameters: URLSearchParams): string | undefined {
  if (!parameters.get('client_id')) return 'Missing required parameter: client_id';
  const redirect = parameters.get('redirect_uri') ?? '';
  if (!/^https?:\/\//.test(redirect)) return 'Missing or invalid parameter: redirect_uri';
  if (parameters.get('response_type') !== 'code') return 'Unsupported response_type: only code';
  if (!(parameters.get('scope') ?? '').split(' ').includes('openid')) return 'The scope must include openid';
  return undefined;
}

function authorizePage(response: ServerResponse, parameters: URLSearchParams): void {
  const problem = authorizationProblem(parameters);
  if (problem) return pageError(response, problem);
  const scopes = (parameters.get('scope') ?? '').split(' ').filter(Boolean);
  const apiScopes = scopes.filter((scope) => scope.startsWith('https://'));
  const hidden = [...parameters]
    .map(([name, value]) => `<input type="hidden" name="${html(name)}" value="${html(value)}">`)
    .join('');
  const boxes = apiScopes
    .map(
      (scope) =>
        `<label><input type="checkbox" name="granted_scope" value="${html(scope)}" checked> ${html(scope.replace('https://www.googleapis.com/auth/', ''))}</label><br>`,
    )
    .join('');
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in (simulated Google)</title></head>
<body style="font-family: sans-serif; max-width: 32em; margin: 3em auto">
<h1>Sign in with Google</h1>
<p>This is Tessera's <b>simulated</b> Google: any address signs in, and nothing leaves this machine.</p>
<form method="post">${hidden}
<p><label>E-mail <input type="email" name="email" required value="${html(parameters.get('login_hint') ?? '')}"></label></p>
<p>${html(parameters.get('client_id') ?? '')} wants access to:</p><p>${boxes}</p>
<p><button name="decision" value="allow">Allow</button> <button name="decision" value="deny">Cancel</button></p>
</form></body></html>`;
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(page);
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  return new URLSearchParams((await readBytes(request, 64 * 1024))?.toString('utf8') ?? '');
}

async function authorizeDecision(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const form = await readForm(request);
  const problem = authorizationProblem(form);
  if (problem) return pageError(response, problem);
  const redirect = new URL(form.get('redirect_uri')!);
  const state = form.get('state');
  if (state) redirect.searchParams.set('state', state);
  if (form.get('decision') !== 'allow') {
    redirect.searchParams.set('error', 'access_denied');
    response.writeHead(302, { location: redirect.href });
    response.end();
    return;
  }
  const email = (form.get('email') ?? '').trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return pageError(response, 'Enter an e-mail address');
  const requested = (form.get('scope') ?? '').split(' ').filter(Boolean);
  const ticked = new Set(form.getAll('granted_scope'));
  // Sign-in scopes are always granted; API scopes only when their box stayed ticked.
  const scopes = requested
    .filter((scope) => !scope.startsWith('https://') || ticked.has(scope))
    .map((scope) => grantedNames[scope] ?? scope);
  const code = `4/sim-${randomBytes(24).toString('base64url')}`;
  codes.set(code, {
    grant: { account: accountOf(email), clientId: form.get('client_id')!, scopes, revoked: false },
    redirectUri: form.get('redirect_uri')!,
    ...(form.get('nonce') ? { nonce: form.get('nonce')! } : {}),
    ...(form.get('code_challenge') ? { codeChallenge: form.get('code_challenge')! } : {}),
    ...(form.get('code_challenge_method') ? { codeChallengeMethod: form.get('code_challenge_method')! } : {}),
    offline: form.get('access_type') === 'offline',
    expiresAt: Date.now() + codeLifetimeMs,
  });
  redirect.searchParams.set('code', code);
  redirect.searchParams.set('scope', scopes.join(' '));
  redirect.searchParams.set('authuser', '0');
  redirect.searchParams.set('prompt', 'consent');
  response.writeHead(302, { location: redirect.href });
  response.end();
}

const oauthError = (response: ServerResponse, status: number, error: string, description: string) =>
  sendJson(response, status, { error, error_description: description }, { 'cache-control': 'no-store' });

/** The client's credentials, by client_secret_basic or client_secret_post; checked against its first secret. */
function client(request: IncomingMessage, form: URLSearchParams): { id: string } | undefined {
  let id = form.get('client_id') ?? undefined;
  let secret = form.get('client_secret') ?? undefined;
  const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (basic) {
    const [user, password] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
    id = decodeURIComponent(user ?? '');
    secret = decodeURIComponent(password ?? '');
  }
  if (!id || !secret) return undefined;
  const known = clientSecrets.get(id);
  if (known === undefined) clientSecrets.set(id, secret);
  else if (known !== secret) return undefined;
  return { id };
}

async function token(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const form = await readForm(request);
  const caller = client(request, form);
  if (!caller) return oauthError(response, 401, 'invalid_client', 'The OAuth client was not found.');
  const grantType = form.get('grant_type');
  if (grantType === 'authorization_code') {
    const code = form.get('code') ?? '';
    const pending = codes.get(code);
    codes.delete(code);
    if (!pending || pending.expiresAt < Date.now() || pending.grant.clientId !== caller.id) {
      return oauthError(response, 400, 'invalid_grant', 'Malformed auth code.');
    }
    if (form.get('redirect_uri') !== pending.redirectUri) {
      return oauthError(response, 400, 'redirect_uri_mismatch', 'Bad Request');
    }
    if (pending.codeChallenge) {
      const verifier = form.get('code_verifier') ?? '';
      const computed =
        pending.codeChallengeMethod === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
      if (computed !== pending.codeChallenge)
        return oauthError(response, 400, 'invalid_grant', 'Invalid code verifier.');
    }
    const { grant } = pending;
    if (pending.offline) {
      grant.refreshToken = `1//sim-${randomBytes(32).toString('base64url')}`;
      refreshTokens.set(grant.refreshToken, grant);
    }
    return sendJson(
      response,
      200,
      {
        ...issueAccessToken(grant),
        ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
        id_token: await idToken(request, grant, pending.nonce),
      },
      { 'cache-control': 'no-store' },
    );
  }
  if (grantType === 'refresh_token') {
    const grant = refreshTokens.get(form.get('refresh_token') ?? '');
    if (!grant || grant.revoked || grant.clientId !== caller.id) {
      return oauthError(response, 400, 'invalid_grant', 'Token has been expired or revoked.');
    }
    grant.account.stats.refreshGrants += 1;
    return sendJson(
      response,
      200,
      { ...issueAccessToken(grant), id_token: await idToken(request, grant, undefined) },
      { 'cache-control': 'no-store' },
    );
  }
  return oauthError(response, 400, 'unsupported_grant_type', `Invalid grant_type: ${grantType ?? ''}`);
}

function issueAccessToken(grant: Grant) {
  const accessToken = `ya29.sim-${randomBytes(32).toString('base64url')}`;
  accessTokens.set(accessToken, { grant, expiresAt: Date.now() + accessTokenSeconds * 1000 });
  return {
    access_token: accessToken,
    expires_in: accessTokenSeconds,
    scope: grant.scopes.join(' '),
    token_type: 'Bearer',
  };
}

async function idToken(request: IncomingMessage, grant: Grant, nonce: string | undefined): Promise<string> {
  const { privateKey, jwk } = await key();
  const { account } = grant;
  return new SignJWT({
    azp: grant.clientId,
    email: account.email,
    email_verified: true,
    name: account.name,
    ...(nonce ? { nonce } : {}),
  })
    .setProtectedHeader({ alg: 'RS256', kid: jwk.kid!, typ: 'JWT' })
    .setIssuer(`${ownOrigin(request)}${issuerPath}`)
    .setAudience(grant.clientId)
    .setSubject(account.sub)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);
}

async function revoke(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
  const form = await readForm(request);
  const value = form.get('token') ?? url.searchParams.get('token') ?? '';
  const grant = refreshTokens.get(value) ?? accessTokens.get(value)?.grant;
  if (!grant || grant.revoked) return oauthError(response, 400, 'invalid_token', 'Token expired or revoked');
  grant.revoked = true;
  sendJson(response, 200, {});
}

function userinfo(request: IncomingMessage, response: ServerResponse): void {
  const caller = authenticate(request);
  if (!caller.ok) {
    sendJson(response, 401, { error: 'invalid_request', error_description: 'Invalid Credentials' });
    return;
  }
  const { account } = caller;
  sendJson(response, 200, { sub: account.sub, name: account.name, email: account.email, email_verified: true });
}
