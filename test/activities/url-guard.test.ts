/**
 * The URL guard against real sockets on loopback. The simulator (its host allowed, as tests and benches configure
 * it) serves the pages; "trap" servers on 127.0.0.1 and ::1 are NOT allowed and count every TCP connection they
 * get, so each refusal also proves that nothing reached the forbidden target. Names are resolved by an injected
 * lookup (`fakeDns`), so no test depends on, or sends anything to, a real resolver or a non-loopback address.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { gzipSync } from 'node:zlib';
import {
  ContentTypeRefusedError,
  FetchNetworkError,
  FetchTimeoutError,
  guardedFetch,
  nonPublicRange,
  ResponseTooLargeError,
  TooManyRedirectsError,
  UrlRefusedError,
  type GuardedFetchOptions,
  type HostLookup,
} from '../../activities/net/url-guard.ts';
import { startSimulator, type RunningSimulator } from '../../simulator/server.ts';

interface LocalServer {
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

/** A plain HTTP server on loopback that answers every request with `answer` and counts connections. */
async function startServer(
  host: '127.0.0.1' | '::1',
  answer: (response: ServerResponse) => void,
  port = 0,
): Promise<LocalServer> {
  const server: Server = createServer((_request, response) => answer(response));
  const local: LocalServer = { port: 0, connections: 0, close: () => closeServer(server) };
  server.on('connection', () => (local.connections += 1));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  local.port = (server.address() as AddressInfo).port;
  return local;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

const secret = (response: ServerResponse) => {
  response.writeHead(200, { 'content-type': 'text/plain' });
  response.end('internal secret');
};

/** A resolver with fixed answers: each name has a list of answers, one per call (the last one repeats). */
function fakeDns(answers: Record<string, string[][]>): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string) => {
    const forName = answers[hostname];
    if (forName === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    const answer = forName[Math.min(calls.filter((name) => name === hostname).length, forName.length - 1)]!;
    calls.push(hostname);
    return answer.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(lookup, { calls });
}

async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the fetch to fail');
}

let simulator: RunningSimulator;
let trap4: LocalServer;
let trap6: LocalServer;
let options: GuardedFetchOptions;

beforeAll(async () => {
  simulator = await startSimulator();
  trap4 = await startServer('127.0.0.1', secret);
  trap6 = await startServer('::1', secret);
  options = { allowedHosts: [`127.0.0.1:${simulator.port}`], timeoutMs: 5_000 };
});

afterAll(async () => {
  await Promise.all([simulator.close(), trap4.close(), trap6.close()]);
});

describe('nonPublicRange', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700:4700::1111',
    '2a00:1450:4001:800::200e',
    '::ffff:8.8.8.8',
  ])('%s is public', (address) => {
    expect(nonPublicRange(address)).toBeUndefined();
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.5', 'private'],
    ['172.16.3.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.10.1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.5', 'private'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['2002:7f00:1::1', '6to4'],
    ['2002:a00:5::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'teredo'],
    ['64:ff9b::a00:5', 'rfc6052'],
    ['::127.0.0.1', 'not global unicast'],
    ['::7f00:1', 'not global unicast'],
    ['::10.0.0.5', 'not global unicast'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['100::1', 'discard'],
    ['localhost', 'not an IP address'],
  ])('%s is refused (%s)', (address, range) => {
    expect(nonPublicRange(address)).toBe(range);
  });
});

describe('guardedFetch', () => {
  it('fetches a page from an allowed host, with status, final URL, type and body', async () => {
    const response = await guardedFetch(`${simulator.url}/pages/article`, options);
    expect(response).toMatchObject({
      status: 200,
      url: `${simulator.url}/pages/article`,
      contentType: 'text/html',
      charset: 'utf-8',
    });
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.body.toString('utf8')).toContain('<title>Durable Execution, Explained</title>');
  });

  it('follows up to maxRedirects redirects, each hop checked, and refuses one more', async () => {
    const chain = (hops: number) => {
      let url = `${simulator.url}/pages/article`;
      for (let hop = 0; hop < hops; hop += 1) url = `${simulator.url}/pages/redirect?to=${encodeURIComponent(url)}`;
      return url;
    };
    const followed = await guardedFetch(chain(3), { ...options, maxRedirects: 3 });
    expect(followed.url).toBe(`${simulator.url}/pages/article`);
    const relative = await guardedFetch(`${simulator.url}/pages/redirect?to=/pages/plain`, options);
    expect(relative.url).toBe(`${simulator.url}/pages/plain`);

    const error = await failureOf(guardedFetch(chain(4), { ...options, maxRedirects: 3 }));
    expect(error).toBeInstanceOf(TooManyRedirectsError);
    expect(error.message).toBe(`${chain(4)} redirected more than 3 times`);
  });

  it('refuses loopback not in allowedHosts, and nothing reaches it', async () => {
    const error = await failureOf(guardedFetch(`http://127.0.0.1:${trap4.port}/secret`, options));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toBe(
      `refused http://127.0.0.1:${trap4.port}/secret: 127.0.0.1 is not a public address (loopback); ` +
        'only public internet addresses may be fetched',
    );
    expect(trap4.connections).toBe(0);
  });

  it.each([
    ['decimal', (port: number) => `http://2130706433:${port}/`],
    ['hexadecimal', (port: number) => `http://0x7f.0.0.1:${port}/`],
    ['short', (port: number) => `http://127.1:${port}/`],
    ['unspecified (reaches loopback on Linux)', (port: number) => `http://0.0.0.0:${port}/`],
    ['IPv4-mapped IPv6', (port: number) => `http://[::ffff:127.0.0.1]:${port}/`],
    ['the name localhost (system resolver)', (port: number) => `http://localhost:${port}/`],
  ])('refuses loopback spelled %s, and nothing reaches it', async (_spelling, url) => {
    const error = await failureOf(guardedFetch(url(trap4.port), options));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toMatch(/is not a public address \((loopback|unspecified)\)/);
    expect(trap4.connections).toBe(0);
  });

  it('refuses IPv6 loopback, and nothing reaches it', async () => {
    const error = await failureOf(guardedFetch(`http://[::1]:${trap6.port}/`, options));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toMatch(/::1 is not a public address \(loopback\)/);
    expect(trap6.connections).toBe(0);
  });

  it.each(['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/latest/meta-data/'])(
    'refuses the cloud metadata address %s',
    async (url) => {
      const error = await failureOf(guardedFetch(url, options));
      expect(error).toBeInstanceOf(UrlRefusedError);
      expect(error.message).toMatch(/is not a public address \(cloud metadata\)/);
    },
  );

  it.each([
    ['127.0.0.1', () => `http://127.0.0.1:${trap4.port}/secret`, () => trap4],
    ['::1', () => `http://[::1]:${trap6.port}/secret`, () => trap6],
    ['a name resolving to loopback', () => `http://internal.test:${trap4.port}/secret`, () => trap4],
    ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/', () => undefined],
  ])('refuses a redirect from the allowed simulator to %s', async (_target, target, trap) => {
    const lookup = fakeDns({ 'internal.test': [['127.0.0.1']] });
    const start = `${simulator.url}/pages/redirect?to=${encodeURIComponent(target())}`;
    const error = await failureOf(guardedFetch(start, { ...options, lookup }));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toContain(`refused ${target()} (redirected from ${start}): `);
    expect(error.message).toMatch(/is not a public address/);
    expect(trap()?.connections ?? 0).toBe(0);
  });

  it('refuses a name that resolves to a private address', async () => {
    const lookup = fakeDns({ 'evil.test': [['10.0.0.5']] });
    const error = await failureOf(guardedFetch('http://evil.test/', { ...options, lookup }));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toMatch(/evil\.test resolves to 10\.0\.0\.5, which is not a public address \(private\)/);
    expect(lookup.calls).toEqual(['evil.test']);
  });

  it('refuses a name when any of its answers is not public', async () => {
    const lookup = fakeDns({ 'mixed.test': [['93.184.216.34', '127.0.0.1']] });
    const error = await failureOf(guardedFetch(`http://mixed.test:${trap4.port}/`, { ...options, lookup }));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toMatch(/mixed\.test resolves to 127\.0\.0\.1/);
    expect(trap4.connections).toBe(0);
  });

  it('connects only to the answer it checked, so a name whose answer changes afterwards never reaches the new one', async () => {
    // `rebind.test` answers the simulator's 127.0.0.1 first and a trap on [::1] at the same port after that: a
    // fetch that resolved the name again to connect (the rebinding hole) would reach the trap. The name is in
    // allowedHosts only because its first answer is loopback; no non-loopback address may be used in tests.
    const rebound = await startServer('::1', secret, simulator.port);
    try {
      const lookup = fakeDns({ 'rebind.test': [['127.0.0.1'], ['::1']] });
      const url = `http://rebind.test:${simulator.port}/pages/plain`;
      const response = await guardedFetch(url, { lookup, allowedHosts: [`rebind.test:${simulator.port}`] });
      expect(response.body.toString()).toContain('Plain text page.');
      expect(lookup.calls).toEqual(['rebind.test']);
      expect(rebound.connections).toBe(0);
    } finally {
      await rebound.close();
    }
  });

  it.each(['file:///etc/passwd', 'ftp://example.com/file.txt', 'data:text/html,<p>hi</p>', 'javascript:alert(1)'])(
    'refuses the scheme of %s without resolving anything',
    async (url) => {
      const lookup = fakeDns({});
      const error = await failureOf(guardedFetch(url, { ...options, lookup }));
      expect(error).toBeInstanceOf(UrlRefusedError);
      expect(error.message).toMatch(/only http and https URLs may be fetched/);
      expect(lookup.calls).toEqual([]);
    },
  );

  it('refuses a redirect to another scheme', async () => {
    const start = `${simulator.url}/pages/redirect?to=${encodeURIComponent('file:///etc/passwd')}`;
    const error = await failureOf(guardedFetch(start, options));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error.message).toBe(
      `refused file:///etc/passwd (redirected from ${start}): only http and https URLs may be fetched`,
    );
  });

  it.each(['user:secret@', 'user@', ':secret@'])(
    'refuses credentials in the URL (%s), even to an allowed host',
    async (credentials) => {
      const allowedTrap = { ...options, allowedHosts: [`127.0.0.1:${trap4.port}`] };
      const error = await failureOf(guardedFetch(`http://${credentials}127.0.0.1:${trap4.port}/`, allowedTrap));
      expect(error).toBeInstanceOf(UrlRefusedError);
      expect(error.message).toBe(`refused http://127.0.0.1:${trap4.port}/: URLs with credentials may not be fetched`);
      expect(trap4.connections).toBe(0);
    },
  );

  it('refuses a body larger than maxBytes, declared or streamed', async () => {
    const declared = await failureOf(guardedFetch(`${simulator.url}/pages/article`, { ...options, maxBytes: 100 }));
    expect(declared).toBeInstanceOf(ResponseTooLargeError);
    expect(declared.message).toBe(`${simulator.url}/pages/article is larger than the 100 bytes a fetch may read`);

    const url = `${simulator.url}/pages/large?bytes=${50 * 1024 * 1024}`;
    const started = Date.now();
    const streamed = await failureOf(guardedFetch(url, { ...options, maxBytes: 256 * 1024 }));
    expect(streamed).toBeInstanceOf(ResponseTooLargeError);
    expect(streamed.message).toMatch(/is larger than the 256 KiB a fetch may read/);
    expect(Date.now() - started).toBeLessThan(2_000);

    const fits = await guardedFetch(`${simulator.url}/pages/large?bytes=300000`, { ...options, maxBytes: 300_000 });
    expect(fits.body.length).toBe(300_000);
  });

  it('decompresses what it asked for, and counts the decompressed bytes against maxBytes', async () => {
    const page = gzipSync('<p>compressed page</p>');
    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024));
    const compressed = await startServer('127.0.0.1', (response) => {
      const body = response.req.url === '/bomb' ? bomb : page;
      response.writeHead(200, {
        'content-type': 'text/html',
        'content-encoding': 'gzip',
        'content-length': body.length,
      });
      response.end(body);
    });
    try {
      const allowed = { ...options, allowedHosts: [`127.0.0.1:${compressed.port}`], maxBytes: 1024 * 1024 };
      const response = await guardedFetch(`http://127.0.0.1:${compressed.port}/`, allowed);
      expect(response.body.toString()).toBe('<p>compressed page</p>');
      const error = await failureOf(guardedFetch(`http://127.0.0.1:${compressed.port}/bomb`, allowed));
      expect(error).toBeInstanceOf(ResponseTooLargeError);
    } finally {
      await compressed.close();
    }
  });

  it('checks the content type before reading the body, by prefix', async () => {
    const textOnly = { ...options, allowedContentTypes: ['text/html', 'text/plain'] };
    const error = await failureOf(guardedFetch(`${simulator.url}/pages/binary`, textOnly));
    expect(error).toBeInstanceOf(ContentTypeRefusedError);
    expect(error.message).toBe(
      `${simulator.url}/pages/binary is application/octet-stream, not one of the types accepted (text/html, text/plain)`,
    );
    const anyText = await guardedFetch(`${simulator.url}/pages/plain`, { ...options, allowedContentTypes: ['text/'] });
    expect(anyText.contentType).toBe('text/plain');
    // An error page is returned with its status whatever its type: the caller reports the status.
    const missing = await guardedFetch(`${simulator.url}/pages/status?code=404`, {
      ...options,
      allowedContentTypes: ['application/json'],
    });
    expect(missing.status).toBe(404);
  });

  it('gives up at the deadline with a retryable timeout', async () => {
    const started = Date.now();
    const error = await failureOf(guardedFetch(`${simulator.url}/pages/slow?ms=10000`, { ...options, timeoutMs: 300 }));
    expect(error).toBeInstanceOf(FetchTimeoutError);
    expect(error.message).toBe(`${simulator.url}/pages/slow?ms=10000 did not answer within 0.3 s`);
    expect((error as FetchTimeoutError).retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("rejects with the caller's reason when the caller aborts", async () => {
    const controller = new AbortController();
    const reason = new Error('turn cancelled');
    setTimeout(() => controller.abort(reason), 100);
    const url = `${simulator.url}/pages/slow?ms=10000`;
    const error = await failureOf(guardedFetch(url, { ...options, signal: controller.signal }));
    expect(error).toBe(reason);
  });

  it('verifies https certificates against the host name it sends as SNI', async () => {
    // A self-signed certificate for tls.test (valid until 2126): the guard must refuse it, not trust it.
    const context = createSecureContext({ key: selfSignedKey, cert: selfSignedCertificate });
    const servernames: string[] = [];
    let requests = 0;
    const server = createTlsServer(
      {
        SNICallback: (servername, done) => {
          servernames.push(servername);
          done(null, context);
        },
      },
      (_request, response) => {
        requests += 1;
        response.end('secret');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const lookup = fakeDns({ 'tls.test': [['127.0.0.1']] });
      const url = `https://tls.test:${port}/`;
      const error = await failureOf(guardedFetch(url, { lookup, allowedHosts: [`tls.test:${port}`] }));
      expect(error).toBeInstanceOf(FetchNetworkError);
      expect(error.message).toMatch(new RegExp(`^could not fetch ${url}: self-signed certificate`));
      expect((error as FetchNetworkError).retryable).toBe(false);
      expect(servernames).toEqual(['tls.test']);
      expect(requests).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reports a host that refuses the connection as a retryable network failure', async () => {
    const closed = await startServer('127.0.0.1', secret);
    await closed.close();
    const error = await failureOf(
      guardedFetch(`http://127.0.0.1:${closed.port}/`, { ...options, allowedHosts: [`127.0.0.1:${closed.port}`] }),
    );
    expect(error).toBeInstanceOf(FetchNetworkError);
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect((error as FetchNetworkError).retryable).toBe(true);
  });
});

const selfSignedKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5OrjIidbFKXfmkk5
ZMFpAwISBdCn+ouxbr5da4lecfKhRANCAARyJ3RQfPtdUXfzFCaVbAlmn9Gq4zBs
rdcpos1852d98C1Cbb1oI6Z1i6C8/Knsd4U4HkCSjWtj+H/QRIwv/HwT
-----END PRIVATE KEY-----
`;

const selfSignedCertificate = `-----BEGIN CERTIFICATE-----
MIIBkjCCATigAwIBAgIUZn97S88lKFVMTAl8h7slcnvoY2owCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIdGxzLnRlc3QwIBcNMjYxMTIzMTA1ODM3WhgPMjEyNjEwMzAx
MDU4MzdaMBMxETAPBgNVBAMMCHRscy50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEcid0UHz7XVF38xQmlWwJZp/RquMwbK3XKaLNfOdnffAtQm29aCOmdYug
vPyp7HeFOB5Ako1rY/h/0ESML/x8E6NoMGYwHQYDVR0OBBYEFJ+UxlWkafSNRFgZ
xTWR3hq6CYpPMB8GA1UdIwQYMBaAFJ+UxlWkafSNRFgZxTWR3hq6CYpPMA8GA1Ud
EwEB/wQFMAMBAf8wEwYDVR0RBAwwCoIIdGxzLnRlc3QwCgYIKoZIzj0EAwIDSAAw
RQIgWufGYK60qFCB8suj7RxxDAT3mC0fof8NF6dXkXH4GiICIQD6H4En3kXA5XGY
hutf6MkmrTN2vz/ooGZtBKh6/I5aCA==
-----END CERTIFICATE-----
`;

describe('POST (media job callbacks)', () => {
  /** Records each request it gets and answers with `status` (a redirect to the trap for 307). */
  async function startReceiver(status: number) {
    const received: Array<{ method?: string; body: string; headers: Record<string, unknown> }> = [];
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({
          method: request.method,
          body: Buffer.concat(chunks).toString('utf8'),
          headers: request.headers,
        });
        response.writeHead(status, status === 307 ? { location: `http://127.0.0.1:${trap4.port}/` } : {});
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { port, received, close: () => closeServer(server) };
  }

  it('sends the body with its length and headers to an allowed host', async () => {
    const receiver = await startReceiver(204);
    try {
      const body = JSON.stringify({ event: 'media.job.completed', note: 'naïve' });
      const response = await guardedFetch(`http://127.0.0.1:${receiver.port}/hook`, {
        ...options,
        allowedHosts: [`127.0.0.1:${receiver.port}`],
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
      });
      expect(response.status).toBe(204);
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]).toMatchObject({ method: 'POST', body });
      expect(receiver.received[0]!.headers).toMatchObject({
        'content-length': String(Buffer.byteLength(body)),
        'content-type': 'application/json',
        'webhook-id': 'msg_1',
      });
    } finally {
      await receiver.close();
    }
  });

  it('never follows a redirect, and refuses a loopback host not allowed', async () => {
    const receiver = await startReceiver(307);
    const before = trap4.connections;
    try {
      const redirected = await failureOf(
        guardedFetch(`http://127.0.0.1:${receiver.port}/hook`, {
          ...options,
          allowedHosts: [`127.0.0.1:${receiver.port}`],
          method: 'POST',
          body: '{}',
        }),
      );
      expect(redirected).toBeInstanceOf(TooManyRedirectsError);
      const refused = await failureOf(
        guardedFetch(`http://127.0.0.1:${trap4.port}/hook`, { ...options, method: 'POST', body: '{}' }),
      );
      expect(refused).toBeInstanceOf(UrlRefusedError);
      expect(trap4.connections).toBe(before);
    } finally {
      await receiver.close();
    }
  });
});
