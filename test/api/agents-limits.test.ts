/**
 * The agent service's per-IP limit (spec 8): requests to paths starting /chat, /api or /a2a are counted per client
 * IP (AGENT_IP_LIMIT_PER_MINUTE, here 5 per 60 s); past it, 429 with Retry-After. Other paths are not counted. The
 * client's IP is the socket's, or, behind a proxy listed in TRUSTED_PROXIES, the one it forwards (api/forwarding.ts).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startTestPlatform({ AGENT_IP_LIMIT_PER_MINUTE: '5' });
}, 300_000);

afterAll(async () => {
  await platform?.close();
});

it('limits /chat, /api and /a2a per IP with 429 and Retry-After, and leaves other paths alone', async () => {
  // Uncounted paths first: however many, they spend nothing.
  for (let i = 0; i < 8; i++) {
    expect((await platform.agents('/auth/me')).status).toBe(200);
    expect((await platform.agents('/health')).status).toBe(200);
    expect((await platform.agents('/billing/plans')).status).toBe(200);
  }
  const { key } = await platform.createKey();
  // Five counted requests, whatever their answer (a 401 or a 404 counts as much as a 200).
  const counted = ['/api/keys', '/chat/stream', '/a2a/tasks', '/api/v1/agents', '/chatter'];
  for (const path of counted) {
    const response = await platform.agents(path, { key });
    expect({ path, status: response.status }).not.toEqual({ path, status: 429 });
    expect(response.headers.get('x-ratelimit-limit')).toBe('5');
  }
  for (const path of ['/api/keys', '/chat', '/chat/stream', '/a2a', '/api/v1/chat']) {
    const response = await platform.agents(path, { key, method: path === '/api/v1/chat' ? 'POST' : 'GET' });
    expect({ path, status: response.status }).toEqual({ path, status: 429 });
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const body = (await response.json()) as { error: { type: string; retry_after: number } };
    expect(body.error.type).toBe('rate_limit_exceeded');
    expect(body.error.retry_after).toBe(retryAfter);
  }
  // A made-up X-Forwarded-For is not a new client: nobody listed the caller as a proxy (TRUSTED_PROXIES is empty).
  for (const forwarded of ['203.0.113.7', '198.51.100.1, 203.0.113.7']) {
    const response = await platform.agents('/api/keys', { key, headers: { 'x-forwarded-for': forwarded } });
    expect({ forwarded, status: response.status }).toEqual({ forwarded, status: 429 });
  }
  // Still open elsewhere.
  expect((await platform.agents('/auth/me', { key })).status).toBe(200);
  expect((await platform.agents('/link/code', { key })).status).toBe(200);
  expect((await platform.agents('/health')).status).toBe(200);
});

it('counts the client a trusted proxy forwards for, and only as far as trusted proxies vouch for the chain', async () => {
  // Another API process on the same database, behind a proxy on loopback (the test itself) that it trusts.
  const replica = await startReplica(platform, { TRUSTED_PROXIES: 'loopback', AGENT_IP_LIMIT_PER_MINUTE: '5' });
  try {
    const { key } = await platform.createKey();
    const send = (forwarded: string) =>
      fetch(`${replica.agents!.url}/api/keys`, {
        headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': forwarded },
      }).then((response) => response.status);
    for (let i = 0; i < 5; i++) expect(await send('203.0.113.50')).toBe(200);
    expect(await send('203.0.113.50')).toBe(429);
    // What the client wrote before the address the proxy saw is not believed: the proxy vouches for one hop.
    expect(await send('198.51.100.1, 203.0.113.50')).toBe(429);
    // Another client behind the same proxy has its own allowance.
    expect(await send('203.0.113.51')).toBe(200);
  } finally {
    await replica.close();
  }
});
