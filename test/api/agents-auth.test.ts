/**
 * Agent service logins and accounts through HTTP (docs/agent-service.md): the magic link read
 * from a real SMTP server (smtp-server on loopback), the session cookie and its attributes, /auth/me, logout,
 * replayed, forged and expired links, the CSRF origin check, Bearer and X-API-Key access, /api/keys, /link, and
 * billing against stripe-mock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { ConversationStore } from '../../activities/conversations/conversation-store.ts';
import { createMailer } from '../../activities/mail/mailer.ts';
import type { RunningStripeMock } from '../../scripts/lib/stripe-mock.ts';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import {
  checkoutCompleted,
  signedDelivery,
  startTestStripeMock,
  stripeId,
  stripeSettings,
} from '../helpers/stripe-mock.ts';

let smtp: TestSmtp;
let stripeMock: RunningStripeMock;
let platform: TestPlatform;
let database: pg.Pool;

beforeAll(async () => {
  smtp = await startTestSmtp();
  stripeMock = await startTestStripeMock();
  platform = await startTestPlatform({
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Tessera Test <login@tessera.test>',
    AGENT_AI_NAME: 'Tessa',
    ...stripeSettings(stripeMock.url),
  });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await stripeMock?.stop();
  await smtp?.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const newEmail = () => `login-${randomBytes(4).toString('hex')}@example.com`;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

async function register(email: string) {
  return platform.agents('/auth/register', { method: 'POST', body: JSON.stringify({ email }) });
}

/** Asks for a magic link and reads it from the mail that arrived at the SMTP server. */
async function magicLink(email: string): Promise<{ link: URL; token: string }> {
  const response = await register(email);
  expect(response.status).toBe(200);
  const mail = await smtp.nextMail(email);
  const match = /http:\/\/127\.0\.0\.1:\d+\/auth\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text);
  expect(match).not.toBeNull();
  const link = new URL(match![0]);
  return { link, token: link.searchParams.get('token')! };
}

function verify(token: string, accept = 'application/json') {
  return platform.agents(`/auth/verify?token=${encodeURIComponent(token)}`, { headers: { accept } });
}

/** The session cookie a response set, as `name=value` for a Cookie header. */
function sessionCookie(response: Response): string {
  const header = response.headers.getSetCookie().find((cookie) => cookie.startsWith('tessera_session='));
  expect(header).toBeDefined();
  return header!.split(';')[0]!;
}

/** Logs a new user in by magic link: their e-mail, cookie and user id. */
async function login(email = newEmail()) {
  const { token } = await magicLink(email);
  const response = await verify(token);
  expect(response.status).toBe(200);
  const body = (await response.json()) as Json;
  return { email, cookie: sessionCookie(response), userId: body.user.id as string };
}

async function me(init: { cookie?: string; key?: string; headers?: Record<string, string> } = {}) {
  const response = await platform.agents('/auth/me', init);
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

async function sessionCount(userId: string): Promise<number> {
  const { rows } = await database.query<{ count: string }>('select count(*) from web_sessions where user_id = $1', [
    userId,
  ]);
  return Number(rows[0]!.count);
}

describe('magic link', () => {
  it('mails a one-time link through SMTP; the link logs in with a session cookie and creates a free account', async () => {
    const email = newEmail();
    const response = await register(email);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ sent: true });
    const mail = await smtp.nextMail(email);
    expect(mail.from).toBe('login@tessera.test');
    expect(mail.raw).toMatch(/^Subject: Your Tessera login link/m);
    const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;

    // Only the token's hash is stored.
    const stored = await database.query<{ token_hash: string; email: string; expires_at: Date }>(
      'select token_hash, email, expires_at from login_tokens where email = $1',
      [email],
    );
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0]!.token_hash).toBe(sha256(token));
    expect(JSON.stringify(stored.rows)).not.toContain(token);
    const lifetime = stored.rows[0]!.expires_at.getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(14 * 60_000);
    expect(lifetime).toBeLessThanOrEqual(15 * 60_000);

    const verified = await verify(token);
    expect(verified.status).toBe(200);
    const body = (await verified.json()) as Json;
    expect(body).toMatchObject({ logged_in: true, user: { email, plan: 'free' } });
    const setCookie = verified.headers.getSetCookie().find((cookie) => cookie.startsWith('tessera_session='))!;
    expect(setCookie).toMatch(/^tessera_session=tss_[A-Za-z0-9_-]{43}; /);
    expect(setCookie).toContain('; Path=/;');
    expect(setCookie).toContain(`; Max-Age=${30 * 24 * 3600}`);
    expect(setCookie).toContain('; HttpOnly');
    expect(setCookie).toContain('; SameSite=Lax');
    // Served on 127.0.0.1 over http: no Secure (a browser would drop the cookie).
    expect(setCookie).not.toContain('Secure');

    const cookie = setCookie.split(';')[0]!;
    const sessionRow = await database.query<{ token_hash: string; expires_at: Date }>(
      'select token_hash, expires_at from web_sessions where user_id = $1',
      [body.user.id],
    );
    expect(sessionRow.rows[0]!.token_hash).toBe(sha256(cookie.slice('tessera_session='.length)));

    const account = await me({ cookie });
    expect(account).toEqual({
      logged_in: true,
      via: 'cookie',
      user: { id: body.user.id, email, plan: 'free' },
      credits: { balance: 100, held: 0, used: 0 },
      linked_apps: [],
      ai_name: 'Tessa',
    });
  });

  it('redirects a browser to the front page after login', async () => {
    const { token } = await magicLink(newEmail());
    const response = await verify(token, 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
    expect(sessionCookie(response)).toMatch(/^tessera_session=tss_/);
  });

  it('logs an existing account in (no second user) on a later link', async () => {
    const first = await login();
    const second = await login(first.email);
    expect(second.userId).toBe(first.userId);
    const { rows } = await database.query('select id from users where email = $1', [first.email]);
    expect(rows).toHaveLength(1);
  });

  it('refuses a replayed link, and makes no second session', async () => {
    const email = newEmail();
    const { token } = await magicLink(email);
    const first = await verify(token);
    expect(first.status).toBe(200);
    const { user } = (await first.json()) as Json;
    const replay = await verify(token);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as Json).error.type).toBe('invalid_request');
    expect(replay.headers.getSetCookie()).toEqual([]);
    expect(await sessionCount(user.id)).toBe(1);
  });

  it('uses a link once even when two requests race for it', async () => {
    const { token } = await magicLink(newEmail());
    const statuses = (await Promise.all([verify(token), verify(token), verify(token)])).map((r) => r.status);
    expect(statuses.sort()).toEqual([200, 400, 400]);
  });

  it('refuses forged tokens', async () => {
    for (const forged of [randomBytes(32).toString('base64url'), 'x', 'tss_' + 'a'.repeat(43)]) {
      const response = await verify(forged);
      expect(response.status).toBe(400);
      expect(response.headers.getSetCookie()).toEqual([]);
    }
    expect((await platform.agents('/auth/verify')).status).toBe(400);
  });

  it('refuses an expired link', async () => {
    const email = newEmail();
    const { token } = await magicLink(email);
    await database.query(`update login_tokens set expires_at = now() - interval '1 second' where token_hash = $1`, [
      sha256(token),
    ]);
    const response = await verify(token);
    expect(response.status).toBe(400);
    const { rows } = await database.query('select id from users where email = $1', [email]);
    expect(rows).toHaveLength(0);
  });

  it('answers the same for a known and an unknown address, and limits mails per address', async () => {
    const known = await login();
    const unknown = newEmail();
    const knownAnswer = await register(known.email);
    const unknownAnswer = await register(unknown);
    expect(knownAnswer.status).toBe(unknownAnswer.status);
    expect(await knownAnswer.json()).toEqual(await unknownAnswer.json());
    // No account is made before the link is used.
    expect((await database.query('select id from users where email = $1', [unknown])).rows).toHaveLength(0);

    for (let sent = 1; sent < 5; sent++) expect((await register(unknown)).status).toBe(200);
    const refused = await register(unknown);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Case and spaces do not make another address.
    expect((await register(` ${unknown.toUpperCase()} `)).status).toBe(429);
  });

  it('refuses a body without a valid address', async () => {
    const response = await register('not-an-address');
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).error.message).toMatch(/email/);
  });

  it('logs out server-side: the same cookie is refused afterwards', async () => {
    const user = await login();
    const response = await platform.agents('/auth/logout', { method: 'POST', cookie: user.cookie });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ logged_out: true, session_ended: true });
    expect(response.headers.getSetCookie().find((cookie) => cookie.startsWith('tessera_session=;'))).toMatch(
      /Max-Age=0/,
    );
    const { rows } = await database.query<{ revoked_at: Date | null }>(
      'select revoked_at from web_sessions where user_id = $1',
      [user.userId],
    );
    expect(rows[0]!.revoked_at).not.toBeNull();
    expect(await me({ cookie: user.cookie })).toEqual({ logged_in: false, ai_name: 'Tessa' });
    expect((await platform.agents('/api/keys', { cookie: user.cookie })).status).toBe(401);
  });

  it('refuses an expired session', async () => {
    const user = await login();
    await database.query(`update web_sessions set expires_at = now() - interval '1 second' where user_id = $1`, [
      user.userId,
    ]);
    expect((await me({ cookie: user.cookie })).logged_in).toBe(false);
  });
});

describe('who may call', () => {
  it('answers an anonymous caller on /auth/me, and 401 on endpoints that need a login', async () => {
    expect(await me()).toEqual({ logged_in: false, ai_name: 'Tessa' });
    for (const [method, path] of [
      ['GET', '/api/keys'],
      ['POST', '/api/keys'],
      ['GET', '/link/code'],
      ['POST', '/link/verify'],
      ['GET', '/auth/google/status'],
      ['POST', '/billing/create-checkout'],
    ] as const) {
      const response = await platform.agents(path, { method, ...(method === 'POST' ? { body: '{}' } : {}) });
      expect({ path, status: response.status }).toEqual({ path, status: 401 });
    }
  });

  it('accepts a Bearer key everywhere, and X-API-Key on /api/v1/* only', async () => {
    const { key, user_id } = await platform.createKey(newEmail(), 'pro');
    const viaBearer = await me({ key });
    expect(viaBearer).toMatchObject({ logged_in: true, via: 'key', user: { id: user_id, plan: 'pro' } });

    // X-API-Key is read on /api/v1/* only: a valid key reaches the router (404 for an unknown path), a bad one is 401.
    const valid = await platform.agents('/api/v1/no-such-endpoint', { headers: { 'x-api-key': key } });
    expect(valid.status).toBe(404);
    const invalid = await platform.agents('/api/v1/no-such-endpoint', { headers: { 'x-api-key': 'te_wrong' } });
    expect(invalid.status).toBe(401);
    // Elsewhere it is not a credential.
    expect(await me({ headers: { 'x-api-key': key } })).toMatchObject({ logged_in: false });
    // A bearer that is sent must be valid.
    expect((await platform.agents('/auth/me', { key: 'te_wrong' })).status).toBe(401);
  });

  it('refuses an invalid or revoked key on every path, the public ones of both services included', async () => {
    const { key, id } = await platform.createKey(newEmail(), 'free');
    const revoked = await platform.fetch(`/api/v1/apikeys/${id}`, { method: 'DELETE', key });
    expect(revoked.status).toBe(200);
    for (const bad of ['te_wrong', key]) {
      for (const path of ['/health', '/metrics', '/billing/plans', '/.well-known/agent-card.json']) {
        expect({ path, status: (await platform.agents(path, { key: bad })).status }).toEqual({ path, status: 401 });
      }
      for (const path of ['/health', '/metrics', '/v1/models', '/api/v1/plans', '/api/v1/integrations']) {
        expect({ path, status: (await platform.fetch(path, { key: bad })).status }).toEqual({ path, status: 401 });
      }
    }
    // Without a credential they stay open.
    expect((await platform.agents('/health')).status).toBe(200);
    expect((await platform.fetch('/health')).status).toBe(200);
    expect((await platform.fetch('/v1/models')).status).toBe(200);
  });

  it('refuses cookie-authenticated writes from another origin (CSRF), and accepts its own', async () => {
    const user = await login();
    const post = (headers: Record<string, string>, cookie = true) =>
      fetch(`${platform.agentsUrl}/api/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(cookie ? { cookie: user.cookie } : {}), ...headers },
        body: JSON.stringify({ name: 'csrf' }),
      });

    const foreign = await post({ origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as Json).error.type).toBe('permission_denied');
    expect((await post({})).status).toBe(403);
    expect((await post({ referer: 'https://evil.example/page' })).status).toBe(403);
    expect((await post({ origin: 'null' })).status).toBe(403);
    // Logging out by a forged form is refused too.
    const logout = await fetch(`${platform.agentsUrl}/auth/logout`, {
      method: 'POST',
      headers: { cookie: user.cookie, origin: 'https://evil.example' },
    });
    expect(logout.status).toBe(403);
    expect((await me({ cookie: user.cookie })).logged_in).toBe(true);

    expect((await post({ origin: platform.agentsUrl })).status).toBe(201);
    expect((await post({ referer: `${platform.agentsUrl}/settings` })).status).toBe(201);
    // A GET with the cookie needs no origin.
    expect((await fetch(`${platform.agentsUrl}/api/keys`, { headers: { cookie: user.cookie } })).status).toBe(200);

    // A key carries no ambient credential: no origin needed.
    const { key } = await platform.createKey(newEmail(), 'free');
    const keyed = await fetch(`${platform.agentsUrl}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(keyed.status).toBe(201);
  });
});

describe('forwarded headers', () => {
  const forwardedTo = (host: string) => ({ 'x-forwarded-proto': 'https', 'x-forwarded-host': host });

  it('decide nothing when the sender is not a trusted proxy: origin, cookie Secure and links stay the socket’s', async () => {
    const user = await login();
    // A forged form on evil.example that claims, by forwarded headers, to be this service.
    const forged = await fetch(`${platform.agentsUrl}/api/keys`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: user.cookie,
        origin: 'https://evil.example',
        ...forwardedTo('evil.example'),
      },
      body: JSON.stringify({ name: 'forged' }),
    });
    expect(forged.status).toBe(403);
    // The login link is built on the host the request really reached, not on the one the headers name.
    const email = newEmail();
    const registered = await platform.agents('/auth/register', {
      method: 'POST',
      headers: forwardedTo('evil.example'),
      body: JSON.stringify({ email }),
    });
    expect(registered.status).toBe(200);
    const mail = await smtp.nextMail(email);
    expect(mail.text).not.toContain('evil.example');
    const token = /\/auth\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
    // The cookie of a login reached over plain http on loopback is not Secure, whatever the headers claim.
    const verified = await platform.agents(`/auth/verify?token=${token}`, {
      headers: { accept: 'application/json', ...forwardedTo('app.example.com') },
    });
    expect(verified.status).toBe(200);
    const cookie = verified.headers.getSetCookie().find((value) => value.startsWith('tessera_session='))!;
    expect(cookie).not.toMatch(/;\s*Secure/i);
  });

  it('are believed from a proxy in TRUSTED_PROXIES', async () => {
    const replica = await startReplica(platform, { TRUSTED_PROXIES: 'loopback' });
    try {
      const base = replica.agents!.url;
      const { token } = await magicLink(newEmail());
      const verified = await fetch(`${base}/auth/verify?token=${token}`, {
        headers: { accept: 'application/json', ...forwardedTo('app.example.com') },
      });
      expect(verified.status).toBe(200);
      const setCookie = verified.headers.getSetCookie().find((value) => value.startsWith('tessera_session='))!;
      expect(setCookie).toMatch(/;\s*Secure/i);
      // Behind the proxy the service is https://app.example.com: a write from that origin is its own.
      const own = await fetch(`${base}/api/keys`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          cookie: setCookie.split(';')[0]!,
          origin: 'https://app.example.com',
          ...forwardedTo('app.example.com'),
        },
        body: JSON.stringify({ name: 'behind a proxy' }),
      });
      expect(own.status).toBe(201);
    } finally {
      await replica.close();
    }
  });
});

describe('/api/keys', () => {
  it('creates a key for the caller (the secret once) and lists previews only', async () => {
    const user = await login();
    const created = await platform.agents('/api/keys', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ name: 'laptop' }),
    });
    expect(created.status).toBe(201);
    const key = (await created.json()) as Json;
    expect(key).toMatchObject({ name: 'laptop', key: expect.stringMatching(/^te_[A-Za-z0-9_-]{43}$/) });

    const listed = await platform.agents('/api/keys', { cookie: user.cookie });
    expect(listed.status).toBe(200);
    const { keys } = (await listed.json()) as Json;
    expect(keys).toEqual([
      { id: key.id, name: 'laptop', key_preview: key.key_preview, created_at: key.created_at, last_used_at: null },
    ]);
    expect(JSON.stringify(keys)).not.toContain(key.key);

    // The new key is the user's.
    expect(await me({ key: key.key })).toMatchObject({ logged_in: true, user: { id: user.userId } });
    const badName = await platform.agents('/api/keys', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ name: 'x'.repeat(101) }),
    });
    expect(badName.status).toBe(400);
  });
});

describe('linking messaging apps', () => {
  it('answers a 6-digit code for the account, valid 10 minutes, that a messaging chat redeems into it', async () => {
    const user = await login();
    const response = await platform.agents('/link/code', { cookie: user.cookie });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body.code).toMatch(/^\d{6}$/);
    const lifetime = Date.parse(body.expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(9 * 60_000);
    expect(lifetime).toBeLessThanOrEqual(10 * 60_000);
    expect(body.expires_in).toBeGreaterThan(590);
    expect(body.instructions).toContain(`/link ${body.code}`);

    // What `/link CODE` in LINE or Telegram does with it: the code names the account's home session.
    const store = new ConversationStore(database);
    const target = await store.redeemLinkCode(body.code);
    expect(target).toMatchObject({ owner: `user:${user.userId}`, key: 'web:home', channel: 'web' });
  });

  it('verifies a code made in a messaging app and binds that chat to the account', async () => {
    const user = await login();
    const store = new ConversationStore(database);
    const chat = `telegram:${randomBytes(4).toString('hex')}`;
    const telegram = await store.openSession(chat, chat, 'telegram');
    const { code } = await store.createLinkCode(telegram.sessionId);

    const response = await platform.agents('/link/verify', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ code }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ linked: true, channel: 'telegram' });
    expect((await me({ cookie: user.cookie })).linked_apps).toEqual(['telegram']);
    expect(await store.conversationOwner((await store.sessionById(telegram.sessionId))!.conversationId)).toBe(
      `user:${user.userId}`,
    );

    // Used up: a second try is refused; malformed codes are 400 before anything is counted.
    const again = await platform.agents('/link/verify', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ code }),
    });
    expect(again.status).toBe(400);
    const malformed = await platform.agents('/link/verify', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ code: '12ab' }),
    });
    expect(malformed.status).toBe(400);
  });
});

describe('account channels', () => {
  it('reports the channels really linked: web after a login, then LINE and Telegram, and api with a key', async () => {
    const user = await login();
    const store = new ConversationStore(database);
    // A key to read the gateway's account endpoint with (made on the web, as a person would).
    const created = await platform.agents('/api/keys', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ name: 'channels' }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const channels = async () =>
      ((await (await platform.fetch(`/api/v1/account/${user.userId}`, { key })).json()) as Json).channels;
    expect(await channels()).toEqual(['api', 'web']);
    for (const platformName of ['line', 'telegram'] as const) {
      const chat = `${platformName}:${randomBytes(4).toString('hex')}`;
      const session = await store.openSession(chat, chat, platformName);
      const { code } = await store.createLinkCode(session.sessionId);
      const linked = await platform.agents('/link/verify', {
        method: 'POST',
        cookie: user.cookie,
        body: JSON.stringify({ code }),
      });
      expect(linked.status).toBe(200);
    }
    expect(await channels()).toEqual(['api', 'web', 'line', 'telegram']);
    expect((await me({ cookie: user.cookie })).linked_apps).toEqual(['line', 'telegram']);
  });
});

describe('billing', () => {
  it('lists plans publicly', async () => {
    const response = await platform.agents('/billing/plans');
    expect(response.status).toBe(200);
    const { plans } = (await response.json()) as Json;
    expect(plans.map((plan: Json) => [plan.id, plan.purchasable])).toEqual([
      ['free', false],
      ['starter', true],
      ['pro', true],
      ['business', false],
    ]);
    expect(plans[0]).toMatchObject({ monthly_credits: 100, price_usd_month: 0 });
  });

  it('opens a Checkout session for a logged-in user (stripe-mock)', async () => {
    const user = await login();
    const response = await platform.agents('/billing/create-checkout', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ plan: 'pro' }),
    });
    expect(response.status).toBe(200);
    const checkout = (await response.json()) as Json;
    expect(checkout.checkout_url).toMatch(/^https?:\/\//);
    expect(checkout.session_id).toMatch(/^cs_/);
    const { rows } = await database.query<{ stripe_customer_id: string | null }>(
      'select stripe_customer_id from users where id = $1',
      [user.userId],
    );
    expect(rows[0]!.stripe_customer_id).toMatch(/^cus_/);

    const bad = await platform.agents('/billing/create-checkout', {
      method: 'POST',
      cookie: user.cookie,
      body: JSON.stringify({ plan: 'business' }),
    });
    expect(bad.status).toBe(400);
  });

  it('takes Stripe-signed webhooks, once per event, and refuses unsigned ones', async () => {
    const user = await login();
    const subscriber = { userId: user.userId, customer: stripeId('cus'), subscription: stripeId('sub') };
    const event = checkoutCompleted(subscriber, 'starter', Math.floor(Date.now() / 1000));
    const { body, headers } = signedDelivery(event);
    const first = await platform.agents('/billing/webhook', { method: 'POST', body, headers });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ received: true, event_id: event.id });
    const again = await platform.agents('/billing/webhook', { method: 'POST', body, headers });
    expect(await again.json()).toMatchObject({ duplicate: true });
    expect((await me({ cookie: user.cookie })).user.plan).toBe('starter');

    const unsigned = await platform.agents('/billing/webhook', { method: 'POST', body, headers: {} });
    expect(unsigned.status).toBe(400);
  });
});

describe('Google login without configuration', () => {
  it('answers 503 naming the settings', async () => {
    const response = await platform.agents('/auth/google');
    expect(response.status).toBe(503);
    expect(((await response.json()) as Json).error.message).toMatch(/GOOGLE_CLIENT_ID/);
  });
});

describe('mailer', () => {
  it('sends once per idempotency key, over SMTP or to the log', async () => {
    const to = newEmail();
    const mailer = createMailer({ pool: database, smtpUrl: smtp.url, from: 'Tessera <a@tessera.test>', log: () => {} });
    const key = `test:${randomBytes(6).toString('hex')}`;
    const first = await mailer.send({ to, subject: 'Hello', text: 'Once only', idempotencyKey: key });
    const again = await mailer.send({ to, subject: 'Hello', text: 'Once only', idempotencyKey: key });
    expect(again.id).toBe(first.id);
    const mail = await smtp.nextMail(to);
    expect(mail.raw).toContain(`Message-ID: ${first.id}`);
    await expect(smtp.nextMail(to, 300)).rejects.toThrow(/no mail/);

    const lines: string[] = [];
    const logging = createMailer({ pool: database, smtpUrl: undefined, from: 'x <a@b.c>', log: (l) => lines.push(l) });
    expect(logging.transport).toBe('log');
    const logKey = `test:${randomBytes(6).toString('hex')}`;
    await logging.send({ to, subject: 'Login', text: 'Open\nhttp://x/auth/verify?token=abc', idempotencyKey: logKey });
    await logging.send({ to, subject: 'Login', text: 'Open\nhttp://x/auth/verify?token=abc', idempotencyKey: logKey });
    expect(lines).toEqual([
      `[mail] no SMTP_URL, so this mail is logged instead of sent: to ${to}, "Login": Open | http://x/auth/verify?token=abc`,
    ]);
  });
});

describe('one account per address', () => {
  it('logs a magic link and a team invitation into the account the operator made, whatever the capitals', async () => {
    const local = `alice-${randomBytes(4).toString('hex')}`;
    const address = `${local}@example.com`;
    // The operator makes the account with capitals in the address (gateway, master key).
    const created = await platform.createKey(`A${local.slice(1)}@Example.com`, 'pro');

    // The person logs in on the agent service with the address as they type it: the same account, plan and all.
    const { token } = await magicLink(address);
    const verified = await verify(token);
    expect(verified.status).toBe(200);
    expect(((await verified.json()) as Json).user).toEqual({ id: created.user_id, email: address, plan: 'pro' });

    // A team invitation to yet another spelling joins that account too.
    const owner = await platform.createKey(newEmail(), 'pro');
    const json = { accept: 'application/json' };
    const team = await platform.agents('/teams', {
      method: 'POST',
      key: owner.key,
      headers: json,
      body: JSON.stringify({ name: 'Case study' }),
    });
    expect(team.status).toBe(201);
    const teamId = ((await team.json()) as Json).id as string;
    const invited = await platform.agents(`/teams/${teamId}/invite`, {
      method: 'POST',
      key: owner.key,
      headers: json,
      body: JSON.stringify({ email: `${local.toUpperCase()}@example.com` }),
    });
    expect(invited.status).toBe(201);
    const mail = await smtp.nextMail(address);
    const invitation = /\/teams\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
    const accepted = await platform.agents(`/teams/invitations/accept?token=${invitation}`, { headers: json });
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as Json).user).toEqual({ id: created.user_id, email: address });
    const members = await platform.agents(`/teams/${teamId}`, { key: owner.key, headers: json });
    expect(((await members.json()) as Json).members).toEqual([
      expect.objectContaining({ user_id: owner.user_id, role: 'owner' }),
      expect.objectContaining({ user_id: created.user_id, email: address, role: 'member' }),
    ]);

    const accounts = await database.query('select id from users where lower(email) = $1', [address]);
    expect(accounts.rows).toEqual([{ id: created.user_id }]);
  });
});
