/**
 * Cached principals across replicas: a key one replica has cached stops working there once another replica revokes
 * it, and a plan changed straight in the database applies on the next requests, through LISTEN/NOTIFY; and the
 * cache itself: used only while listening, dropped on a notification, never filled by a read that raced a change.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PrincipalCache } from '../../api/principal-cache.ts';
import { PgListener } from '../../db/listener.ts';
import type { RunningGateway } from '../../api/server.ts';
import { createLogger } from '../../process/logger.ts';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let replica: RunningGateway;
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  replica = await startReplica(platform);
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await replica?.close();
  await platform?.close();
});

const listKeys = (url: string, key: string) =>
  fetch(`${url}/api/v1/apikeys`, { headers: { authorization: `Bearer ${key}` } });

const complete = (url: string, key: string, model: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });

/** Polls until `check` holds: the other replica hears of a change asynchronously (milliseconds). */
async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<number> {
  const startedAt = Date.now();
  while (!(await check())) {
    if (Date.now() - startedAt > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(10);
  }
  return Date.now() - startedAt;
}

it('refuses a key on every replica once one of them revoked it', async () => {
  const owner = await platform.createKey();
  const created = await platform.fetch('/api/v1/apikeys', {
    method: 'POST',
    key: owner.key,
    body: JSON.stringify({ name: 'to revoke' }),
  });
  const second = (await created.json()) as { id: string; key: string };
  // Both replicas authenticate (and cache) the key.
  expect((await listKeys(platform.gateway.url, second.key)).status).toBe(200);
  expect((await listKeys(replica.url, second.key)).status).toBe(200);

  const revoked = await fetch(`${replica.url}/api/v1/apikeys/${second.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${owner.key}` },
  });
  expect(revoked.status).toBe(200);
  // The replica that revoked it refuses at once; the other as soon as the notification arrives.
  expect((await listKeys(replica.url, second.key)).status).toBe(401);
  const waited = await eventually(async () => (await listKeys(platform.gateway.url, second.key)).status === 401);
  expect(waited).toBeLessThan(2_000);
  // The owner's other key is untouched.
  expect((await listKeys(platform.gateway.url, owner.key)).status).toBe(200);
});

it('applies a plan changed in the database on both replicas', async () => {
  const user = await platform.createKey(undefined, 'free');
  for (const url of [platform.gateway.url, replica.url]) {
    const refused = await complete(url, user.key, 'gpt-4o');
    expect(refused.status).toBe(403);
  }
  await database.query(`update users set plan = 'pro' where id = $1`, [user.user_id]);
  for (const url of [platform.gateway.url, replica.url]) {
    await eventually(async () => (await complete(url, user.key, 'gpt-4o')).status === 200);
  }
});

it('caches while it listens, forgets on a notification, and never caches a read that raced an invalidation', async () => {
  const listener = new PgListener(platform.databaseUrl, createLogger('test'));
  const cache = new PrincipalCache(listener);
  const principal = { userId: 'user_cache', keyId: 'key_1', operator: false, plan: 'pro' as const, customLimits: null };
  expect(cache.get('hash-a')).toBeUndefined();
  await cache.start();
  cache.set('hash-a', principal, cache.version());
  expect(cache.get('hash-a')).toBeUndefined(); // not listening yet
  await listener.start();
  cache.set('hash-a', principal, cache.version());
  expect(cache.get('hash-a')).toEqual(principal);

  // A lookup that began before an invalidation must not cache what it read.
  const before = cache.version();
  cache.forget('someone else');
  cache.set('hash-b', principal, before);
  expect(cache.get('hash-b')).toBeUndefined();

  // Any change the triggers report (here sent by hand) drops the user's keys.
  await database.query(`select pg_notify('tessera_principals', 'user_cache')`);
  await eventually(async () => cache.get('hash-a') === undefined);

  // Disconnected, or closed, the cache answers nothing: every lookup goes to the database.
  cache.set('hash-a', principal, cache.version());
  await listener.close();
  expect(cache.get('hash-a')).toBeUndefined();
  cache.set('hash-a', principal, cache.version());
  expect(cache.get('hash-a')).toBeUndefined();
  cache.close();
});
