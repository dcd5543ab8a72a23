/**
 * Google login through a real OpenID provider: oidc-provider (v9) run in-process on loopback as GOOGLE_ISSUER, with
 * the agent service as its client. The browser is played by fetch with a cookie jar per site, following redirects
 * by hand and submitting the provider's development login and consent forms. Checked: the authorization request
 * (state, nonce, PKCE S256, scopes, offline access), the callback (session cookie, account created or joined by
 * verified e-mail, scopes and an encrypted refresh token stored), /auth/google/status, and refusals (bad or replayed
 * state, a state from another browser, an unverified e-mail).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';
import pg from 'pg';
import { loginScopes, workspaceScopes } from '../../api/services/logins/google.ts';
import { TokenCipher } from '../../activities/google/token-cipher.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const clientId = 'tessera-agents';
const clientSecret = randomBytes(24).toString('hex');
const encryptionKey = randomBytes(32).toString('base64url');

let server: Server;
let issuer: string;
let platform: TestPlatform;
let database: pg.Pool;
/** The provider's accounts by subject. */
const accounts = new Map<string, { email: string; email_verified: boolean; name: string }>();
/** Refresh tokens the provider issued, for checking what the service stored. */
const issuedRefreshTokens: string[] = [];

beforeAll(async () => {
  // The provider's port must be known before the platform starts (GOOGLE_ISSUER), and the platform's before the
  // provider is configured (its client's redirect URI): listen first, attach the provider afterwards.
  let handler: RequestListener = (_request, response) => {
    response.statusCode = 503;
    response.end();
  };
  server = createServer((request, response) => handler(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  platform = await startTestPlatform({
    GOOGLE_CLIENT_ID: clientId,
    GOOGLE_CLIENT_SECRET: clientSecret,
    GOOGLE_ISSUER: issuer,
    TOKEN_ENCRYPTION_KEY: encryptionKey,
  });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [`${platform.agentsUrl}/auth/google/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    scopes: ['openid', 'offline_access', ...loginScopes.slice(1), ...workspaceScopes],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    extraParams: ['access_type'],
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    // Google issues a refresh token for access_type=offline&prompt=consent rather than for offline_access.
    issueRefreshToken: (_context, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: (_context, subject) => {
      const account = accounts.get(subject);
      return account ? { accountId: subject, claims: () => ({ sub: subject, ...account }) } : undefined;
    },
  });
  provider.on('refresh_token.saved', (token: { jti: string }) => issuedRefreshTokens.push(token.jti));
  handler = provider.callback();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** One site's cookies, as a browser keeps them (name → value; deletions honoured). */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';');
      const index = pair!.indexOf('=');
      const name = pair!.slice(0, index).trim();
      const value = pair!.slice(index + 1).trim();
      const expired = attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute)) || value === '';
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** A browser: a jar per origin, redirects followed by hand. */
class Browser {
  readonly jars = new Map<string, CookieJar>();

  jar(url: string): CookieJar {
    const origin = new URL(url).origin;
    if (!this.jars.has(origin)) this.jars.set(origin, new CookieJar());
    return this.jars.get(origin)!;
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const jar = this.jar(url);
    const headers = new Headers(init.headers);
    if (jar.header()) headers.set('cookie', jar.header());
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    jar.take(response);
    return response;
  }

  /** Follows redirects from `url` until one leaves for `stopAt` (returned, not requested) or a page answers. */
  async follow(url: string, stopAt: string): Promise<{ url: string; response: Response | null }> {
    let current = url;
    for (let hops = 0; hops < 20; hops++) {
      if (current.startsWith(stopAt)) return { url: current, response: null };
      const response = await this.request(current);
      if (response.status < 300 || response.status >= 400) return { url: current, response };
      current = new URL(response.headers.get('location')!, current).href;
    }
    throw new Error('too many redirects');
  }
}

/**
 * Drives the provider from the authorization URL to the redirect back to the service: logs in as `subject` and
 * consents. Answers the callback URL the provider redirected to.
 */
async function authorizeAtProvider(browser: Browser, authorizationUrl: string, subject: string): Promise<string> {
  let next = authorizationUrl;
  for (let step = 0; step < 6; step++) {
    const { url, response } = await browser.follow(next, platform.agentsUrl);
    if (!response) return url;
    expect(response.status).toBe(200);
    const page = await response.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    const form = new URLSearchParams(
      prompt === 'login' ? { prompt, login: subject, password: 'any' } : { prompt: prompt ?? '' },
    );
    const submitted = await browser.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    expect(submitted.status).toBeGreaterThanOrEqual(300);
    next = new URL(submitted.headers.get('location')!, url).href;
  }
  throw new Error('the provider did not redirect back');
}

function newAccount(options: { verified?: boolean; email?: string } = {}) {
  const subject = `sub-${randomBytes(6).toString('hex')}`;
  const email = options.email ?? `google-${randomBytes(4).toString('hex')}@example.com`;
  accounts.set(subject, { email, email_verified: options.verified ?? true, name: 'Test User' });
  return { subject, email };
}

/** `GET /auth/google` in the browser: the authorization URL it redirects to. */
async function startLogin(browser: Browser): Promise<URL> {
  const response = await browser.request(`${platform.agentsUrl}/auth/google`);
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

async function googleLogin(subject: string, browser = new Browser()) {
  const authorization = await startLogin(browser);
  const callback = await authorizeAtProvider(browser, authorization.href, subject);
  const response = await browser.request(callback, { headers: { accept: 'application/json' } });
  return { response, browser, callback };
}

describe('Google login (oidc-provider)', () => {
  it('redirects with state, nonce, PKCE S256, the login and workspace scopes, and offline access', async () => {
    const browser = new Browser();
    const url = await startLogin(browser);
    expect(url.origin).toBe(issuer);
    expect(url.pathname).toBe('/auth');
    const params = url.searchParams;
    expect(params.get('client_id')).toBe(clientId);
    expect(params.get('response_type')).toBe('code');
    expect(params.get('redirect_uri')).toBe(`${platform.agentsUrl}/auth/google/callback`);
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('access_type')).toBe('offline');
    expect(params.get('prompt')).toBe('consent');
    expect(params.get('scope')!.split(' ')).toEqual([...loginScopes, ...workspaceScopes]);
    // The state is bound to this browser; the server keeps only its hash.
    expect(browser.jar(platform.agentsUrl).get('tessera_oauth_state')).toBe(params.get('state'));
    const { rows } = await database.query('select * from oauth_login_states');
    expect(JSON.stringify(rows)).not.toContain(params.get('state'));
  });

  it('logs in: a new account for a verified e-mail, scopes kept, refresh token encrypted at rest', async () => {
    const { subject, email } = newAccount();
    const { response, browser } = await googleLogin(subject);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body).toMatchObject({ logged_in: true, user: { email, plan: 'free' } });
    const cookie = browser.jar(platform.agentsUrl).get('tessera_session');
    expect(cookie).toMatch(/^tss_/);
    // The state cookie is spent.
    expect(browser.jar(platform.agentsUrl).get('tessera_oauth_state')).toBeUndefined();

    const me = (await (await platform.agents('/auth/me', { cookie: `tessera_session=${cookie}` })).json()) as Json;
    expect(me).toMatchObject({ logged_in: true, via: 'cookie', user: { id: body.user.id, email } });

    const { rows } = await database.query<{
      user_id: string;
      subject: string;
      scopes: string[];
      refresh_token_encrypted: string;
      access_token_encrypted: string;
      access_token_expires_at: Date;
    }>('select * from oauth_identities where subject = $1', [subject]);
    expect(rows).toHaveLength(1);
    const identity = rows[0]!;
    expect(identity.user_id).toBe(body.user.id);
    expect(identity.scopes).toEqual(expect.arrayContaining(['openid', 'email', ...workspaceScopes]));
    expect(identity.refresh_token_encrypted).toMatch(/^v1\./);
    const refreshToken = new TokenCipher(encryptionKey).decrypt(identity.refresh_token_encrypted);
    expect(issuedRefreshTokens).toContain(refreshToken);
    expect(identity.refresh_token_encrypted).not.toContain(refreshToken);
    // The access token the login got is kept too, encrypted, with its expiry (the workspace tools use it first).
    expect(identity.access_token_encrypted).toMatch(/^v1\./);
    expect(identity.access_token_expires_at.getTime()).toBeGreaterThan(Date.now());

    const status = await platform.agents('/auth/google/status', { cookie: `tessera_session=${cookie}` });
    expect(status.status).toBe(200);
    expect(await status.json()).toEqual({
      connected: true,
      email,
      scopes: identity.scopes,
      workspace_scopes_granted: true,
      missing_scopes: [],
      agents: { mail: true, calendar: true, drive: true, sheets: true, docs: true, contacts: true, tasks: true },
    });
  });

  it('joins the account that already has the e-mail, and a later login keeps the same account', async () => {
    const { subject, email } = newAccount();
    const existing = await platform.createKey(email, 'pro');
    const first = await googleLogin(subject);
    expect(first.response.status).toBe(200);
    expect(((await first.response.json()) as Json).user).toMatchObject({ id: existing.user_id, plan: 'pro' });
    // The e-mail changes at the provider: the identity (by subject) still leads to the same account.
    accounts.get(subject)!.email = `renamed-${email}`;
    const second = await googleLogin(subject);
    expect(((await second.response.json()) as Json).user.id).toBe(existing.user_id);
    const { rows } = await database.query('select email from oauth_identities where subject = $1', [subject]);
    expect(rows).toEqual([{ email: `renamed-${email}` }]);
  });

  it('redirects a browser to the front page after the login', async () => {
    const { subject } = newAccount();
    const browser = new Browser();
    const callback = await authorizeAtProvider(browser, (await startLogin(browser)).href, subject);
    const response = await browser.request(callback);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
    expect(browser.jar(platform.agentsUrl).get('tessera_session')).toMatch(/^tss_/);
  });

  it('refuses an e-mail the provider has not verified', async () => {
    const { subject, email } = newAccount({ verified: false });
    const { response } = await googleLogin(subject);
    expect(response.status).toBe(403);
    expect((await database.query('select id from users where email = $1', [email])).rows).toHaveLength(0);
    expect((await database.query('select id from oauth_identities where subject = $1', [subject])).rows).toHaveLength(
      0,
    );
  });

  it('refuses a bad state, a replayed callback, and a callback started in another browser; nothing is stored', async () => {
    const { subject } = newAccount();
    const browser = new Browser();
    const callback = new URL(await authorizeAtProvider(browser, (await startLogin(browser)).href, subject));

    // A state that was never issued (with a cookie to match, as an attacker controls both in their own browser).
    const forged = new URL(callback);
    forged.searchParams.set('state', randomBytes(32).toString('base64url'));
    const forgedResponse = await fetch(forged, {
      headers: { cookie: `tessera_oauth_state=${forged.searchParams.get('state')}`, accept: 'application/json' },
      redirect: 'manual',
    });
    expect(forgedResponse.status).toBe(400);

    // The real callback, opened in a browser that did not start the login (login CSRF).
    const elsewhere = await new Browser().request(callback.href, { headers: { accept: 'application/json' } });
    expect(elsewhere.status).toBe(400);

    const counted = async () =>
      Number(
        (await database.query('select count(*) from oauth_identities where subject = $1', [subject])).rows[0].count,
      );
    expect(await counted()).toBe(0);

    // The right browser succeeds once; replaying the same callback fails.
    const state = browser.jar(platform.agentsUrl).get('tessera_oauth_state')!;
    const first = await browser.request(callback.href, { headers: { accept: 'application/json' } });
    expect(first.status).toBe(200);
    const replay = await fetch(callback, {
      headers: { cookie: `tessera_oauth_state=${state}`, accept: 'application/json' },
      redirect: 'manual',
    });
    expect(replay.status).toBe(400);
    expect(replay.headers.getSetCookie().some((cookie) => cookie.startsWith('tessera_session='))).toBe(false);
    expect(await counted()).toBe(1);
  });

  it('turns a provider error on the callback into a 400', async () => {
    const browser = new Browser();
    const authorization = await startLogin(browser);
    const state = authorization.searchParams.get('state')!;
    const response = await browser.request(
      `${platform.agentsUrl}/auth/google/callback?error=access_denied&state=${state}&iss=${encodeURIComponent(issuer)}`,
      { headers: { accept: 'application/json' } },
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).error.message).toMatch(/access_denied/);
  });

  it('reports status: 401 without a login, not connected for an account that never linked Google', async () => {
    expect((await platform.agents('/auth/google/status')).status).toBe(401);
    const { key } = await platform.createKey();
    const response = await platform.agents('/auth/google/status', { key });
    expect(await response.json()).toEqual({
      connected: false,
      email: null,
      scopes: [],
      workspace_scopes_granted: false,
      missing_scopes: workspaceScopes,
      agents: { mail: false, calendar: false, drive: false, sheets: false, docs: false, contacts: false, tasks: false },
    });
  });
});
