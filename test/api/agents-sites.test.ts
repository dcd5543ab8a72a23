/**
 * Site publishing on the agent service (spec 4.6), through HTTP: publish, the site served by host name
 * (`<sub>.localhost`, node:http with a Host header) with its security and caching headers, nothing of the app on a
 * site host, list, update, delete, other users refused, hostile subdomains and oversize html refused; the
 * publish_site tool through an agent turn that waits for approval, and its once-per-call store write. With Debian's
 * Chromium installed, a real browser shows a published page's script runs but can neither read the app's cookie nor
 * call the app (driven over the DevTools protocol: playwright-core is not installed here).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { createServer } from 'node:net';
import pg from 'pg';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { SiteStore, SiteUrls } from '../../activities/sites/site-store.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let smtp: TestSmtp;
let pool: pg.Pool;
let port: number;
let key: string;
let userId: string;
let otherKey: string;

/** A free port for the agent service: the tool's site URLs (built without a request) name AGENT_PORT. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: chosen } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return chosen;
}

beforeAll(async () => {
  port = await freePort();
  smtp = await startTestSmtp();
  platform = await startTestPlatform({ AGENT_PORT: String(port), SMTP_URL: smtp.url, SITE_MAX_BYTES: '65536' });
  pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  ({ key, user_id: userId } = await platform.createKey());
  otherKey = (await platform.createKey()).key;
}, 300_000);

afterAll(async () => {
  await pool?.end();
  await platform?.close();
  await smtp?.close();
});

const newSubdomain = () => `site-${randomBytes(4).toString('hex')}`;
const page = (text: string) =>
  `<!doctype html><html><head><title>${text}</title></head><body><h1>${text}</h1></body></html>`;

async function call(path: string, init: { key?: string; method?: string; body?: unknown } = {}) {
  const response = await platform.agents(path, {
    key: init.key,
    method: init.method ?? 'GET',
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const publish = (body: unknown, apiKey = key) => call('/deploy/site', { key: apiKey, method: 'POST', body });

interface Served {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request to the agent service with a Host header of our choosing (fetch does not let one set Host). */
function hostRequest(
  host: string,
  path = '/',
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Served> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { ...options.headers, host } },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end();
  });
}

function expectSiteHeaders(served: Served): void {
  const csp = served.headers['content-security-policy'] as string;
  expect(csp).toContain('sandbox allow-scripts allow-forms allow-popups;');
  expect(csp).not.toContain('allow-same-origin');
  expect(csp).toContain("connect-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(served.headers['x-content-type-options']).toBe('nosniff');
  expect(served.headers['referrer-policy']).toBe('no-referrer');
  expect(served.headers['set-cookie']).toBeUndefined();
}

describe('publishing and serving by host name', () => {
  it('publishes a site and serves it on <subdomain>.localhost with its headers; nothing else on that host', async () => {
    const subdomain = newSubdomain();
    const html = `${page('Hello')}<script>document.title = 'ran'</script>`;
    const published = await publish({ subdomain, title: 'Hello page', html });
    expect(published.status).toBe(201);
    expect(published.body).toMatchObject({
      ok: true,
      url: `http://${subdomain}.localhost:${port}/`,
      site: { subdomain, title: 'Hello page', bytes: Buffer.byteLength(html), etag: expect.any(String) },
    });

    const served = await hostRequest(`${subdomain}.localhost:${port}`);
    expect(served.status).toBe(200);
    expect(served.body).toBe(html); // served exactly as published, scripts included
    expect(served.headers['content-type']).toBe('text/html; charset=utf-8');
    expectSiteHeaders(served);
    const etag = served.headers.etag as string;
    expect(etag).toBe(`"${published.body.site.etag}"`);
    expect(served.headers['cache-control']).toBe('no-cache');
    // The port is ignored, a trailing dot and capitals too; /index.html is the same page; HEAD has no body.
    expect((await hostRequest(`${subdomain.toUpperCase()}.LOCALHOST.`)).body).toBe(html);
    expect((await hostRequest(`${subdomain}.localhost`, '/index.html')).body).toBe(html);
    const head = await hostRequest(`${subdomain}.localhost`, '/', { method: 'HEAD' });
    expect([head.status, head.body]).toEqual([200, '']);
    const revalidated = await hostRequest(`${subdomain}.localhost`, '/', { headers: { 'if-none-match': etag } });
    expect(revalidated.status).toBe(304);

    // Nothing of the app is reachable on a site host: its routes are 404, writes 405, with the same headers.
    for (const path of ['/health', '/auth/me', '/deploy/sites', '/api/v1/agents', '/favicon.ico', '/../health']) {
      const other = await hostRequest(`${subdomain}.localhost:${port}`, path, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect([path, other.status]).toEqual([path, 404]);
      expect(other.headers['content-type']).toBe('text/plain; charset=utf-8');
      expectSiteHeaders(other);
    }
    const post = await hostRequest(`${subdomain}.localhost`, '/', { method: 'POST' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
    // A forwarded host naming a site host is a site request too (a proxy must not open the app on it).
    const forwarded = await hostRequest(`127.0.0.1:${port}`, '/health', {
      headers: { 'x-forwarded-host': `${subdomain}.localhost` },
    });
    expect(forwarded.status).toBe(404);
    // Unknown sites, nested names and invalid labels are 404; the app itself still answers on its own host.
    expect((await hostRequest(`nothing-here.localhost`)).status).toBe(404);
    expect((await hostRequest(`a.${subdomain}.localhost`)).status).toBe(404);
    expect((await hostRequest(`a_b.localhost`)).status).toBe(404);
    const app = await hostRequest(`localhost:${port}`, '/health');
    expect([app.status, JSON.parse(app.body).service]).toEqual([200, 'agents']);
  });

  it('lists, updates and deletes the caller’s sites', async () => {
    const { key: owner } = await platform.createKey();
    const first = newSubdomain();
    const second = newSubdomain();
    expect((await publish({ subdomain: first, title: 'First', html: page('one') }, owner)).status).toBe(201);
    expect((await publish({ subdomain: second, title: 'Second', html: page('two') }, owner)).status).toBe(201);
    const listed = await call('/deploy/sites', { key: owner });
    expect(listed.status).toBe(200);
    expect(listed.body.sites.map((site: Json) => site.subdomain)).toEqual([second, first]);
    expect(listed.body.sites[0]).toEqual({
      subdomain: second,
      title: 'Second',
      url: `http://${second}.localhost:${port}/`,
      bytes: page('two').length,
      etag: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const before = await hostRequest(`${first}.localhost`);
    const updated = await call(`/deploy/site/${first}`, { key: owner, method: 'PUT', body: { html: page('new') } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      ok: true,
      url: `http://${first}.localhost:${port}/`,
      site: { title: 'First' },
    });
    const after = await hostRequest(`${first}.localhost`);
    expect(after.body).toBe(page('new'));
    expect(after.headers.etag).not.toBe(before.headers.etag);
    const retitled = await call(`/deploy/site/${first}`, { key: owner, method: 'PUT', body: { title: 'Renamed' } });
    expect(retitled.body.site).toMatchObject({ title: 'Renamed', etag: updated.body.site.etag });
    expect((await call(`/deploy/site/${first}`, { key: owner, method: 'PUT', body: {} })).status).toBe(400);

    // POST on a name one already has is a 409 (PUT updates); on a name someone else has, 409 too.
    const again = await publish({ subdomain: first, title: 'Again', html: page('again') }, owner);
    expect([again.status, again.body.error.type]).toEqual([409, 'conflict']);
    expect(again.body.error.message).toContain('PUT');
    const taken = await publish({ subdomain: first, title: 'Mine', html: page('mine') }, otherKey);
    expect([taken.status, taken.body.error.message]).toEqual([
      409,
      `The subdomain '${first}' is taken; choose another`,
    ]);

    const deleted = await call(`/deploy/site/${first}`, { key: owner, method: 'DELETE' });
    expect(deleted).toEqual({ status: 200, body: { subdomain: first, ok: true, deleted: true } });
    expect((await hostRequest(`${first}.localhost`)).status).toBe(404);
    expect((await call(`/deploy/site/${first}`, { key: owner, method: 'DELETE' })).status).toBe(404);
    expect((await call('/deploy/sites', { key: owner })).body.sites).toHaveLength(1);
  });

  it('refuses another user’s update and delete as a site that does not exist (404), and needs a login', async () => {
    const subdomain = newSubdomain();
    expect((await publish({ subdomain, title: 'Mine', html: page('mine') })).status).toBe(201);
    const update = await call(`/deploy/site/${subdomain}`, {
      key: otherKey,
      method: 'PUT',
      body: { html: page('defaced') },
    });
    expect([update.status, update.body.error.type]).toEqual([404, 'not_found']);
    const remove = await call(`/deploy/site/${subdomain}`, { key: otherKey, method: 'DELETE' });
    expect(remove.status).toBe(404);
    expect((await hostRequest(`${subdomain}.localhost`)).body).toBe(page('mine'));
    expect((await call('/deploy/sites', { key: otherKey })).body.sites).toEqual([]);

    expect((await publish({ subdomain: newSubdomain(), title: 'x', html: page('x') }, '')).status).toBe(401);
    expect((await call('/deploy/sites')).status).toBe(401);
    expect((await call(`/deploy/site/${subdomain}`, { method: 'DELETE' })).status).toBe(401);
  });

  it('refuses hostile subdomains, titles and html', async () => {
    const hostile = [
      'www',
      'api',
      'admin',
      'localhost',
      '..',
      '.',
      'a_b',
      'a.b',
      '-a',
      'a-',
      'xn--80ak6aa92e',
      '',
      'a'.repeat(64),
      'é',
      'a b',
      '<script>',
      42,
      null,
    ];
    for (const subdomain of hostile) {
      const response = await publish({ subdomain, title: 'Hostile', html: page('x') });
      expect([subdomain, response.status, response.body.error?.param]).toEqual([subdomain, 400, 'subdomain']);
    }
    expect((await publish({ subdomain: 'a'.repeat(63).replace(/^a/, 'b'), title: 't', html: page('63') })).status).toBe(
      201,
    );
    expect(
      (await publish({ subdomain: 'Mixed-Case-' + randomBytes(2).toString('hex'), title: 't', html: page('m') })).body
        .site.subdomain,
    ).toMatch(/^mixed-case-/);

    const bad = [
      { title: 'x', html: 'y'.repeat(65_537) }, // over SITE_MAX_BYTES (64 KiB here)
      { title: 'x', html: 'é'.repeat(32_769) }, // counted in UTF-8 bytes, not characters
      { title: 'x', html: '' },
      { title: 'x', html: { nested: true } },
      { title: 'x', html: 'nul \u0000 byte' },
      { title: 'x'.repeat(201), html: page('x') },
      { title: 'line\nbreak', html: page('x') },
      { title: 'x', html: page('x'), extra: 1 },
    ];
    for (const body of bad) {
      const response = await publish({ subdomain: newSubdomain(), ...body });
      expect(response.status).toBe(400);
      expect(response.body.error.type).toBe('invalid_request');
    }
    const oversize = await publish({ subdomain: newSubdomain(), title: 'x', html: 'y'.repeat(65_537) });
    expect(oversize.body.error).toMatchObject({ param: 'html', message: expect.stringContaining('65536 bytes') });
    const reservedPut = await call('/deploy/site/www', { key, method: 'PUT', body: { title: 'x' } });
    expect(reservedPut.status).toBe(400);
  });

  it('sets the app’s session cookie host-only (no Domain), so it never reaches a site host', async () => {
    const { cookie, setCookie } = await login();
    expect(setCookie).not.toMatch(/domain=/i);
    expect(cookie).toMatch(/^tessera_session=tss_/);
  });
});

describe('the publish_site tool', () => {
  let agentId: string;

  beforeAll(async () => {
    const created = await call('/agents/custom', {
      key,
      method: 'POST',
      body: {
        name: 'Publisher',
        description: 'Builds and publishes small web pages',
        system_prompt: 'You publish web pages for the user.',
        tools: ['publish_site'],
      },
    });
    expect(created.status).toBe(201);
    agentId = created.body.id;
  });

  const toolCall = (args: unknown) => `Publishing it. [[call publish_site ${JSON.stringify(args)}]] [[iterations 2]]`;

  async function loop(message: string): Promise<StreamReader> {
    const response = await platform.agents(`/chat/loop/web:${randomUUID()}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message, agent_id: agentId }),
    });
    expect(response.status).toBe(200);
    return new StreamReader(response);
  }

  it('asks for approval first, then publishes once approved', async () => {
    const subdomain = newSubdomain();
    const html = page('From the agent');
    const reader = await loop(toolCall({ subdomain, title: 'Agent page', html }));
    const required = (await reader.until('hitl_required')) as Json;
    expect(required).toMatchObject({ tool: 'publish_site', arguments: { subdomain, title: 'Agent page', html } });
    expect((await hostRequest(`${subdomain}.localhost`)).status).toBe(404);
    const approved = await platform.agents(`/chat/approvals/${required.id}/approve`, { method: 'POST', key });
    expect(approved.status).toBe(200);
    await reader.until('hitl_resolved');
    const done = (await reader.until('tool')) as Json;
    expect(done).toMatchObject({ tool: 'publish_site', status: 'calling' });
    expect(await reader.until('tool')).toMatchObject({ tool: 'publish_site', status: 'done', ok: true });
    await reader.until('[DONE]');
    const served = await hostRequest(`${subdomain}.localhost:${port}`);
    expect([served.status, served.body]).toEqual([200, html]);
    expect((await call('/deploy/sites', { key })).body.sites).toContainEqual(
      expect.objectContaining({ subdomain, title: 'Agent page', url: `http://${subdomain}.localhost:${port}/` }),
    );
  });

  it('publishes nothing when the approval is rejected', async () => {
    const subdomain = newSubdomain();
    const reader = await loop(toolCall({ subdomain, title: 'Never', html: page('never') }));
    const required = (await reader.until('hitl_required')) as Json;
    const rejected = await platform.agents(`/chat/approvals/${required.id}/reject`, { method: 'POST', key });
    expect(rejected.status).toBe(200);
    await reader.until('[DONE]');
    expect((await hostRequest(`${subdomain}.localhost`)).status).toBe(404);
  });

  it('writes once per call key, replaces only the user’s own site, and refuses others’ names', async () => {
    const store = new SiteStore({
      pool,
      urls: new SiteUrls({ domain: 'localhost', port }),
      maxBytes: 65_536,
    });
    const subdomain = newSubdomain();
    const first = await store.publish(userId, { subdomain, title: 'v1', html: page('v1') }, 'turn-1:call-1');
    expect(first).toEqual({ url: `http://${subdomain}.localhost:${port}/`, created: true });
    // The user edits the page; a retry of the same call must not put v1 back.
    await call(`/deploy/site/${subdomain}`, { key, method: 'PUT', body: { html: page('edited') } });
    const retried = await store.publish(userId, { subdomain, title: 'v1', html: page('v1') }, 'turn-1:call-1');
    expect(retried.created).toBe(false);
    expect((await hostRequest(`${subdomain}.localhost`)).body).toBe(page('edited'));
    // A new call replaces the user's own site.
    await store.publish(userId, { subdomain, title: 'v2', html: page('v2') }, 'turn-2:call-1');
    expect((await hostRequest(`${subdomain}.localhost`)).body).toBe(page('v2'));
    // Someone else's name is refused, whatever the call key.
    const { user_id: stranger } = await platform.createKey();
    await expect(store.publish(stranger, { subdomain, title: 'x', html: page('x') }, 'turn-1:call-1')).rejects.toThrow(
      /taken/,
    );
    await expect(store.publish(userId, { subdomain: 'www', title: 'x', html: page('x') }, 'k')).rejects.toThrow(
      /reserved/,
    );
  });
});

// `npm test` installs Debian's Chromium when it is missing (scripts/lib/debian-packages.ts); without it this part fails.
const chromium = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim() || 'chromium';

describe('in a real browser (Chromium)', () => {
  let browser: ChildProcess;
  let devtools: DevTools;

  beforeAll(async () => {
    browser = spawn(
      chromium,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--remote-debugging-port=0',
        `--user-data-dir=/tmp/tessera-sites-chromium-${randomBytes(4).toString('hex')}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const endpoint = await new Promise<string>((resolve, reject) => {
      let output = '';
      browser.stderr!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      browser.on('exit', (code) => reject(new Error(`chromium exited (${code}): ${output}`)));
    });
    devtools = await DevTools.connect(endpoint);
  }, 60_000);

  afterAll(async () => {
    devtools?.close();
    browser?.kill();
  });

  it('runs the page’s script, which cannot read the app’s cookie nor call the app with it', async () => {
    // A real login in the browser: the magic link opened on http://localhost:<port> sets the session cookie there.
    const { token } = await magicLink();
    const tab = await devtools.open(`http://localhost:${port}/auth/verify?token=${token}`);
    const appCookies = await tab.send('Network.getCookies', { urls: [`http://localhost:${port}/`] });
    expect(appCookies.cookies.map((cookie: Json) => cookie.name)).toContain('tessera_session');
    const me = await tab.evaluate(
      `fetch('/auth/me', {credentials: 'include'}).then((r) => r.json()).then((b) => b.via ?? b.user?.id ?? 'none')`,
    );
    expect(me).not.toBe('none');

    const subdomain = newSubdomain();
    const probe = `<!doctype html><html><head><title>probe</title></head><body><script>
      const results = {ran: true};
      try { results.cookie = document.cookie; } catch (error) { results.cookie = 'blocked: ' + error.name; }
      try { localStorage.setItem('x', '1'); results.storage = 'allowed'; } catch (error) { results.storage = 'blocked'; }
      results.origin = self.origin;
      fetch('http://localhost:${port}/auth/me', {credentials: 'include'})
        .then((response) => response.text().then((text) => { results.app = response.status + ' ' + text; }))
        .catch((error) => { results.app = 'blocked: ' + error.name; })
        .finally(() => { document.body.dataset.results = JSON.stringify(results); });
    </script></body></html>`;
    expect((await publish({ subdomain, title: 'Probe', html: probe })).status).toBe(201);
    await tab.navigate(`http://${subdomain}.localhost:${port}/`);
    let results: Json | null = null;
    for (let attempt = 0; attempt < 50 && !results; attempt++) {
      const text = (await tab.evaluate('document.body && document.body.dataset.results')) as string | undefined;
      results = text ? (JSON.parse(text) as Json) : null;
      if (!results) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(results).toMatchObject({ ran: true, origin: 'null', storage: 'blocked' });
    expect(results!.cookie).toMatch(/^(blocked|$)/);
    expect(results!.app).toMatch(/^blocked/);
    // The browser holds no cookie for the site host.
    const siteCookies = await tab.send('Network.getCookies', { urls: [`http://${subdomain}.localhost:${port}/`] });
    expect(siteCookies.cookies).toEqual([]);
  }, 60_000);
});

/** Asks for a magic link for a new address and returns its token (read from the mail at the test SMTP server). */
async function magicLink(): Promise<{ token: string }> {
  const email = `sites-${randomBytes(4).toString('hex')}@example.com`;
  const response = await platform.agents('/auth/register', { method: 'POST', body: JSON.stringify({ email }) });
  expect(response.status).toBe(200);
  const mail = await smtp.nextMail(email);
  const match = /\/auth\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.text);
  return { token: match![1]! };
}

/** Logs a new user in by magic link: the cookie (`name=value`) and the whole Set-Cookie header. */
async function login(): Promise<{ cookie: string; setCookie: string }> {
  const { token } = await magicLink();
  const response = await platform.agents(`/auth/verify?token=${token}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  const setCookie = response.headers.getSetCookie().find((cookie) => cookie.startsWith('tessera_session='))!;
  return { cookie: setCookie.split(';')[0]!, setCookie };
}

/** Reads an agent stream event by event (as test/api/agents-chat.test.ts). */
class StreamReader {
  private readonly iterator: AsyncIterator<{ data: string }>;

  constructor(response: Response) {
    const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    this.iterator = events[Symbol.asyncIterator]();
  }

  async until(type: string): Promise<Json | '[DONE]'> {
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) throw new Error(`the stream ended before ${type}`);
      const data = next.value.data === '[DONE]' ? '[DONE]' : (JSON.parse(next.value.data) as Json);
      if (data === '[DONE]' ? type === '[DONE]' : data.type === type) return data;
    }
  }
}

/** The least of the Chrome DevTools protocol over Node's WebSocket: open a tab, navigate, evaluate. */
class DevTools {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (value: Json) => void; reject: (error: Error) => void }>();
  private readonly listeners = new Set<(message: Json) => void>();

  private readonly socket: WebSocket;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as Json;
      const waiting = message.id === undefined ? undefined : this.pending.get(message.id);
      if (waiting) {
        this.pending.delete(message.id);
        if (message.error) waiting.reject(new Error(JSON.stringify(message.error)));
        else waiting.resolve(message.result);
      }
      for (const listener of this.listeners) listener(message);
    });
  }

  static async connect(url: string): Promise<DevTools> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    return new DevTools(socket);
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    const id = ++this.nextId;
    this.socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  /** A new tab on `url`, loaded. */
  async open(url: string) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    await this.send('Page.enable', {}, sessionId);
    await this.send('Network.enable', {}, sessionId);
    const tab = {
      send: (method: string, params: Json = {}) => this.send(method, params, sessionId),
      navigate: async (target: string) => {
        const loaded = new Promise<void>((resolve) => {
          const listener = (message: Json) => {
            if (message.sessionId === sessionId && message.method === 'Page.loadEventFired') {
              this.listeners.delete(listener);
              resolve();
            }
          };
          this.listeners.add(listener);
        });
        await this.send('Page.navigate', { url: target }, sessionId);
        await loaded;
      },
      evaluate: async (expression: string): Promise<unknown> => {
        const { result, exceptionDetails } = await this.send(
          'Runtime.evaluate',
          { expression, awaitPromise: true, returnByValue: true },
          sessionId,
        );
        if (exceptionDetails) throw new Error(JSON.stringify(exceptionDetails));
        return result.value;
      },
    };
    await tab.navigate(url);
    return tab;
  }

  close(): void {
    this.socket.close();
  }
}
