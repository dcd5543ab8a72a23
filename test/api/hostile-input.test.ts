/**
 * Hostile text at every route of both services (issue 16): NUL and other control characters, unpaired surrogates
 * and malformed percent-encoding in path segments, query parameters and JSON bodies (values and field names). The
 * routes come from the apps' own routers (api/route-table.ts), so a route added later is covered without a list to
 * keep. Every answer must be a 4xx in the error envelope, none a 5xx, and nothing may be stored. Then the case that
 * wedged conversations: a message with a NUL neither hangs nor stalls the session, on every chat door, and a NUL
 * the platform did not take from the caller (a tool's output) is stored without failing the turn.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { routeTable, type RouteEntry } from '../../api/route-table.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';

let platform: TestPlatform;
let key: string;
let database: pg.Pool;

beforeAll(async () => {
  // Billing's webhook configured, so its route answers as in production (a missing signature) rather than 503.
  platform = await startTestPlatform({ STRIPE_WEBHOOK_SECRET: 'whsec_hostile_input_test' });
  key = (await platform.createKey()).key;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** Path segments a client can send: percent-encoded NUL, raw `%00`, another C0 control, an encoded lone surrogate. */
const hostileSegments = ['a%00b', '%00', 'a%01b', '%ED%A0%80', '%E0%A4%A'];
/**
 * Query strings with the same, as a value and as a name; and percent-encoded bytes that are not UTF-8 (an encoded
 * lone surrogate, a byte no UTF-8 has, an overlong NUL), which a query parser would turn into U+FFFD.
 */
const hostileQueries = [
  'q=a%00b',
  'limit=%00&session_id=%00',
  'x%00=1',
  'q=%1B%5B31m',
  'q=%ED%A0%80',
  'limit=%FF',
  'type=%C0%80',
  '%FF=1',
];
/** JSON bodies (as sent, so a lone surrogate escape arrives as one): NUL in a value, deep, in a key; a surrogate. */
const hostileBodies = [
  '{"message":"hi\\u0000there","name":"a\\u0000b","email":"a\\u0000@example.com","content":"x\\u0000"}',
  '{"messages":[{"role":"user","content":[{"type":"text","text":"bell \\u0007"}]}]}',
  '{"na\\u0000me":"value"}',
  '{"message":"broken \\ud800 surrogate","prompt":"\\udfff"}',
];

interface Attempt {
  service: 'gateway' | 'agents';
  route: RouteEntry;
  url: string;
  init: RequestInit;
  label: string;
}

/** A concrete path for the route: each parameter `benign`, except `hostile` at `position`. */
function concretePath(route: RouteEntry, hostile?: { position: number; value: string }): string {
  let position = 0;
  return route.path.replace(/:(\w+)(\([^)]*\))?\??|\{\/?\*\w+\}|\*/g, () => {
    const value = hostile && position === hostile.position ? hostile.value : 'x';
    position++;
    return value;
  });
}

function attemptsFor(service: 'gateway' | 'agents', route: RouteEntry, base: string): Attempt[] {
  const attempts: Attempt[] = [];
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const hasBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
  const benignBody = hasBody ? { body: '{}' } : {};
  route.params.forEach((_, position) => {
    for (const value of hostileSegments) {
      attempts.push({
        service,
        route,
        url: `${base}${concretePath(route, { position, value })}`,
        init: { method: route.method, headers, ...benignBody },
        label: `path parameter ${position} = ${value}`,
      });
    }
  });
  for (const query of hostileQueries) {
    attempts.push({
      service,
      route,
      url: `${base}${concretePath(route)}?${query}`,
      init: { method: route.method, headers, ...benignBody },
      label: `query ${query}`,
    });
  }
  if (hasBody) {
    for (const body of hostileBodies) {
      attempts.push({
        service,
        route,
        url: `${base}${concretePath(route)}`,
        init: { method: route.method, headers, body },
        label: `body ${body}`,
      });
    }
  }
  return attempts;
}

/** Row counts of every table of the platform's database. */
async function rowCounts(): Promise<Record<string, number>> {
  const { rows } = await database.query<{ table_name: string }>(
    `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'
     order by table_name`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of rows) {
    const result = await database.query<{ count: string }>(`select count(*) from "${table_name}"`);
    counts[table_name] = Number(result.rows[0]!.count);
  }
  return counts;
}

describe('hostile text at every route', () => {
  it('answers every path, query and body with a 4xx error envelope, never a 5xx, and stores nothing', async () => {
    const services = [
      { service: 'gateway' as const, base: platform.gateway.url, app: platform.gateway.app },
      { service: 'agents' as const, base: platform.agentsUrl, app: platform.gateway.agents!.app },
    ];
    const attempts = services.flatMap(({ service, base, app }) =>
      routeTable(app).flatMap((route) => attemptsFor(service, route, base)),
    );
    const routes = services.reduce((sum, { app }) => sum + routeTable(app).length, 0);
    // Both routers are read: far more than a handful of routes, each with several attempts.
    expect(routes).toBeGreaterThan(80);
    expect(attempts.length).toBeGreaterThan(routes * 4);

    const before = await rowCounts();
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (const attempt of attempts) {
      const response = await fetch(attempt.url, {
        ...attempt.init,
        redirect: 'manual',
        signal: AbortSignal.timeout(30_000),
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const text = await response.text();
      let body: Json | null = null;
      try {
        body = JSON.parse(text) as Json;
      } catch {
        body = null;
      }
      const where = `${attempt.service} ${attempt.route.method} ${attempt.route.path} (${attempt.label})`;
      if (response.status < 400 || response.status >= 500) {
        failures.push(`${where}: ${response.status} ${text.slice(0, 200)}`);
      } else if (typeof body?.error?.type !== 'string' || typeof body.error.message !== 'string') {
        failures.push(`${where}: ${response.status} without the error envelope: ${text.slice(0, 200)}`);
      } else if (
        response.status === 400 &&
        body.error.type === 'invalid_request' &&
        /NUL|control|surrogate|percent/.test(body.error.message) &&
        !body.error.param
      ) {
        failures.push(`${where}: the 400 names no field: ${text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
    // The text check answers before anything else: nearly every attempt is its 400 (the signed webhooks refuse a
    // body without their signature first, 401).
    expect(statuses.get(400) ?? 0).toBeGreaterThan(attempts.length * 0.9);
    expect(await rowCounts()).toEqual(before);
  }, 300_000);

  it('names the field: a body value, a nested value, a field name, a path segment, a query parameter', async () => {
    const post = (path: string, body: string) =>
      platform.fetch(path, { method: 'POST', key, body }).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as Json,
      }));
    expect(await post('/api/v1/chat', '{"message":"a\\u0000b","session_id":"api:nul"}')).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request', param: 'message' } },
    });
    expect(
      await post('/v1/chat/completions', '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"\\ud800"}]}'),
    ).toMatchObject({ status: 400, body: { error: { param: 'messages.0.content' } } });
    expect(await post('/api/v1/apikeys', '{"na\\u0000me":"laptop"}')).toMatchObject({
      status: 400,
      body: { error: { param: 'na\u0000me' } },
    });
    const segment = await platform.fetch('/api/v1/sessions/a%00b', { key });
    expect(segment.status).toBe(400);
    expect(await segment.json()).toMatchObject({ error: { type: 'invalid_request', param: 'path' } });
    const query = await platform.agents('/search/messages?q=a%00b', { key });
    expect(query.status).toBe(400);
    expect(await query.json()).toMatchObject({ error: { type: 'invalid_request', param: 'q' } });
    // Percent-encoded bytes that are not UTF-8 are refused naming the parameter, on both services, not served as
    // U+FFFD: the searches (memory, messages, files) and the model list.
    for (const bytes of ['%ED%A0%80', '%FF', '%C0%80', 'a%E0%A4%A']) {
      for (const [service, path, param] of [
        ['agents', `/memory/search?q=${bytes}`, 'q'],
        ['agents', `/search/messages?q=${bytes}`, 'q'],
        ['agents', `/rag/search?q=${bytes}`, 'q'],
        ['agents', `/memory/search?q=fine&limit=${bytes}`, 'limit'],
        ['gateway', `/v1/models?type=${bytes}`, 'type'],
        ['gateway', `/v1/models?include=${bytes}`, 'include'],
        ['gateway', `/v1/models?${bytes}=1`, 'query'],
      ] as const) {
        const response = await (service === 'agents' ? platform.agents : platform.fetch)(path, { key });
        expect({ path, status: response.status, body: (await response.json()) as Json }).toEqual({
          path,
          status: 400,
          body: {
            error: {
              type: 'invalid_request',
              message: expect.stringContaining('not valid percent-encoded UTF-8'),
              param,
            },
          },
        });
      }
    }
    // DEL is text (common/text.ts), in a query as in a body: it arrives as sent, as do `+`, a lone `%` and UTF-8.
    const del = await platform.agents('/memory/search?q=a%7Fb+c%25d+100%+%E2%82%AC', { key });
    expect(del.status).toBe(200);
    expect(((await del.json()) as Json).query).toBe('a\u007fb c%d 100% €');
    // Tab, line feed and carriage return are text.
    const fine = await post('/api/v1/apikeys', '{"name":"line one\\nline\\ttwo\\r"}');
    expect(fine.status).toBe(201);
  });
});

describe('a NUL never stalls a conversation', () => {
  const gatewayChat = (message: string, sessionId: string) =>
    platform.fetch('/api/v1/chat', {
      method: 'POST',
      key,
      body: JSON.stringify({ message, session_id: sessionId }),
      signal: AbortSignal.timeout(60_000),
    });

  it('the gateway chat refuses it at once, and the session answers the next message', async () => {
    const sessionId = `api:${randomUUID()}`;
    const refused = await gatewayChat('hello\u0000world', sessionId);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { type: 'invalid_request', param: 'message' } });
    const streamed = await platform.fetch('/api/v1/chat/stream', {
      method: 'POST',
      key,
      body: JSON.stringify({ message: '\u0000', session_id: sessionId }),
      signal: AbortSignal.timeout(60_000),
    });
    expect(streamed.status).toBe(400);
    const next = await gatewayChat('Are you there?', sessionId);
    expect(next.status).toBe(200);
    expect(((await next.json()) as Json).response).toBeTruthy();
  });

  it('the agent service refuses it on /chat/stream and /api/v1/chat, and the session goes on', async () => {
    const sessionId = `web:${randomUUID()}`;
    for (const [path, body] of [
      [`/chat/stream/${sessionId}`, { message: 'hi\u0000' }],
      ['/api/v1/chat', { message: 'hi\u0000', session_id: sessionId }],
    ] as const) {
      const refused = await platform.agents(path, {
        method: 'POST',
        key,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { type: 'invalid_request', param: 'message' } });
    }
    const next = await platform.agents(`/chat/stream/${sessionId}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Write a haiku about rain', preferred_agents: ['writer'] }),
      signal: AbortSignal.timeout(60_000),
    });
    expect(next.status).toBe(200);
    const events = await readSse(next);
    expect(events.some((event) => (event.data as Json | null)?.type === 'cost')).toBe(true);
  });

  it('a NUL in the model’s answer is stored (as U+FFFD), and the turn and the next one finish', async () => {
    const sessionId = `api:${randomUUID()}`;
    // The simulator's provider answers exactly this, decoded: a NUL no client could send (the edge refuses it).
    const first = await gatewayChat('Repeat after me [[say "before\\u0000after"]]', sessionId);
    expect(first.status).toBe(200);
    expect(((await first.json()) as Json).response).toBe('before\u0000after');
    const { rows } = await database.query<{ content: string }>(
      `select m.content from chat_messages m join chat_sessions s on s.id = m.session_id
       where s.key = $1 and m.role = 'assistant'`,
      [sessionId],
    );
    expect(rows.map((row) => row.content)).toEqual(['before\ufffdafter']);
    const next = await gatewayChat('And now?', sessionId);
    expect(next.status).toBe(200);
  });
});

describe('forged forwarded headers', () => {
  it('do not reset the gateway’s per-IP guest limit (nobody is a trusted proxy by default)', async () => {
    const guest = (forwarded?: string) =>
      platform.fetch('/api/v1/chat', {
        method: 'POST',
        headers: forwarded ? { 'x-forwarded-for': forwarded } : {},
        // `/link` is answered without a model, and counts like any guest message.
        body: JSON.stringify({ message: '/link', session_id: `web:${randomUUID()}` }),
      });
    // The guest row: 30 messages an hour per IP (config/plans.yaml).
    for (let i = 0; i < 30; i++) expect((await guest()).status).toBe(200);
    expect((await guest()).status).toBe(429);
    expect((await guest('203.0.113.9')).status).toBe(429);
  });
});
