/** Rate limits (spec section 8): headers, one shared count across two API replicas, 429s, the operator exempt. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import pg from 'pg';
import type { Logger } from '../../process/logger.ts';
import { RateLimits } from '../../api/rate-limit.ts';
import type { RunningGateway } from '../../api/server.ts';
import { loadPlans } from '../../config/load-plans.ts';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let replica: RunningGateway;
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  // A second API process on the same database (its own task queue, pool and limiter instances).
  replica = await startReplica(platform);
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await replica?.close();
  await platform?.close();
});

/** A user whose limits the operator customised (business accounts). */
async function customUser(limits: {
  per_hour: number | null;
  per_day: number | null;
}): Promise<{ key: string; userId: string }> {
  const { key, user_id } = await platform.createKey();
  await database.query(`update users set plan = 'business', custom_limits = $1 where id = $2`, [
    JSON.stringify(limits),
    user_id,
  ]);
  return { key, userId: user_id };
}

function listKeys(url: string, key: string): Promise<Response> {
  return fetch(`${url}/api/v1/apikeys`, { headers: { authorization: `Bearer ${key}` } });
}

describe('rate limits', () => {
  it('tells a free-plan caller where it stands on a completion', async () => {
    const { key } = await platform.createKey(undefined, 'free');
    const { data, response } = await platform
      .openai(key)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBeTruthy();
    const header = (name: string) => response.headers.get(name);
    expect(header('x-ratelimit-limit-hour')).toBe('120');
    expect(header('x-ratelimit-remaining-hour')).toBe('119');
    expect(header('x-ratelimit-limit-day')).toBe('500');
    expect(header('x-ratelimit-remaining-day')).toBe('499');
    // The hour is the binding window (fewer requests left).
    expect(header('x-ratelimit-limit')).toBe('120');
    expect(header('x-ratelimit-remaining')).toBe('119');
    const reset = Number(header('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(3500);
    expect(reset).toBeLessThanOrEqual(3600);
    expect(Number(header('x-ratelimit-reset-day'))).toBeGreaterThan(86_000);
  });

  it('counts a completion only once it is valid and routed: a 400 or a 404 takes no point', async () => {
    const { key } = await platform.createKey(undefined, 'free');
    const post = (body: unknown) =>
      platform.fetch('/v1/chat/completions', { method: 'POST', key, body: JSON.stringify(body) });
    expect((await post({ model: 'gpt-4o-mini', messages: [] })).status).toBe(400);
    expect((await post({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(404);
    const served = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(served.status).toBe(200);
    expect(served.headers.get('x-ratelimit-remaining-hour')).toBe('119');
  });

  it('holds one limit across two API processes', async () => {
    const { key } = await customUser({ per_hour: 6, per_day: null });
    const replicas = [platform.gateway.url, replica.url];
    for (let index = 0; index < 6; index++) {
      const response = await listKeys(replicas[index % 2]!, key);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit-hour')).toBe('6');
      expect(response.headers.get('x-ratelimit-remaining-hour')).toBe(String(5 - index));
      expect(response.headers.get('x-ratelimit-limit-day')).toBeNull(); // unlimited: not reported
    }
    for (const url of replicas) {
      const refused = await listKeys(url, key);
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as { error: { type: string; message: string; retry_after: number } };
      expect(body.error).toMatchObject({
        type: 'rate_limit_exceeded',
        message: 'Rate limit exceeded: 6 requests per hour for this account',
      });
      expect(body.error.retry_after).toBeGreaterThan(0);
      expect(body.error.retry_after).toBeLessThanOrEqual(3600);
      expect(refused.headers.get('retry-after')).toBe(String(body.error.retry_after));
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(refused.headers.get('x-ratelimit-remaining-hour')).toBe('0');
    }

    // The official SDK surfaces it as a RateLimitError, whichever replica answers.
    for (const url of replicas) {
      const error = await new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 }).chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      const apiError = error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(apiError.status).toBe(429);
      expect(apiError.error).toMatchObject({ type: 'rate_limit_exceeded' });
      expect(Number(apiError.headers?.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it('gives back the other window’s point when one window refuses', async () => {
    const { key, userId } = await customUser({ per_hour: 3, per_day: 2 });
    expect((await listKeys(platform.gateway.url, key)).status).toBe(200);
    expect((await listKeys(replica.url, key)).status).toBe(200);
    const refused = await listKeys(platform.gateway.url, key);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { message: string; retry_after: number } };
    expect(body.error.message).toBe('Rate limit exceeded: 2 requests per day for this account');
    expect(body.error.retry_after).toBeGreaterThan(86_000);
    expect(refused.headers.get('x-ratelimit-remaining-day')).toBe('0');
    expect(refused.headers.get('x-ratelimit-remaining-hour')).toBe('1'); // the refused request cost no hour point
    expect(refused.headers.get('x-ratelimit-limit')).toBe('2'); // the day binds
    const stored = await database.query<{ key: string; points: number }>(
      `select key, points from rate_limits where key like '%' || $1 order by key`,
      [`user:${userId}`],
    );
    // In the store: the day counter went past its maximum (the library's upsert); the hour kept two.
    expect(stored.rows).toEqual([
      { key: `rl:day:user:${userId}`, points: 3 },
      { key: `rl:hour:user:${userId}`, points: 2 },
    ]);
  });

  it('never limits the operator key', async () => {
    for (let index = 0; index < 8; index++) {
      const response = await listKeys(index % 2 ? replica.url : platform.gateway.url, platform.masterKey);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });

  it('does not count a request whose text is refused against the agent service’s per-IP limit', async () => {
    // The text check answers first (docs/operations.md, "Text the platform accepts"): nothing is counted.
    const limited = await startReplica(platform, {
      TEMPORAL_TASK_QUEUE: `${platform.environment.TEMPORAL_TASK_QUEUE}-per-ip`,
      AGENT_IP_LIMIT_PER_MINUTE: '3',
    });
    try {
      const { key } = await platform.createKey();
      const send = (path: string, init: RequestInit = {}) =>
        fetch(`${limited.agents!.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        });
      const counted = async () => {
        const { rows } = await database.query<{ points: number }>(
          `select points from rate_limits where key like 'rl:minute:agents-ip:%' and expire > $1`,
          [Date.now()],
        );
        return rows.reduce((sum, row) => sum + row.points, 0);
      };
      const before = await counted();
      const refused = [
        () => send('/api/v1/chat', { method: 'POST', body: '{"message":"hi\\u0000","session_id":"api:nul"}' }),
        () => send('/chat/stream/web:nul', { method: 'POST', body: '{"message":"a\\u0000b"}' }),
        () => send('/api/v1/chat', { method: 'POST', body: '{"message":"\\ud800","session_id":"api:nul"}' }),
        () => send('/api/keys?name=%00'),
        () => send('/api/v1/sessions/a%00b'),
      ];
      // More refusals than the limit allows requests: none is a 429, none carries the limit's headers.
      for (const request of [...refused, ...refused]) {
        const response = await request();
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { type: string } }).error.type).toBe('invalid_request');
        expect(response.headers.get('x-ratelimit-limit')).toBeNull();
      }
      expect(await counted()).toBe(before);
      // The whole allowance is left for requests the service reads.
      for (let index = 0; index < 3; index++) {
        const response = await send('/api/keys');
        expect(response.status).toBe(200);
        expect(response.headers.get('x-ratelimit-remaining')).toBe(String(2 - index));
      }
      expect((await send('/api/keys')).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('lets requests through when its store fails, logging once until it recovers', async () => {
    const pool = new pg.Pool({
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectionTimeoutMillis: 500,
    });
    const logged: string[] = [];
    const logger = { error: (_: unknown, message: string) => logged.push(message) } as unknown as Logger;
    const limits = new RateLimits(pool, loadPlans(), { logger, ownsPool: true });
    const subject = limits.guestSubject('198.51.100.7');
    for (let index = 0; index < 3; index++) {
      await expect(limits.consume(subject)).resolves.toEqual({ allowed: true, windows: [] });
    }
    expect(logged).toHaveLength(1);
    await limits.close();
  });
});
