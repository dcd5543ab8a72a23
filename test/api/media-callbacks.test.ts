/**
 * Media jobs beyond the spec, through HTTP (real Postgres, real Temporal, Replicate played by the simulator, callback
 * receivers on loopback let through by FETCH_ALLOWED_HOSTS as web_fetch's tests do): callbacks signed by the Standard
 * Webhooks spec (verified with the official `standardwebhooks` package), retried after failures and accepted once,
 * given up on after MEDIA_CALLBACK_MAX_ATTEMPTS, signed by the previous secret too after a rotation; `DELETE` cancels
 * a processing video at the provider and refunds it once, and answers 409 on an ended job; `GET /api/v1/media/jobs`
 * pages, filters and isolates users; a bad `callback_url` is a 400 naming it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A callback receiver: `/fail-<n>/…` answers 500 to its first n requests then 204; `/down/…` always 500. */
function startReceiver(): Promise<{ server: Server; url: string; deliveries: Delivery[] }> {
  const deliveries: Delivery[] = [];
  const seen = new Map<string, number>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const count = (seen.get(path) ?? 0) + 1;
      seen.set(path, count);
      const failures = Number(/^\/fail-(\d+)\//.exec(path)?.[1] ?? 0);
      const answered = path.startsWith('/down/') || count <= failures ? 500 : 204;
      deliveries.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      response.writeHead(answered).end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, deliveries });
    });
  });
}

let platform: TestPlatform;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let mediaDir: string;
let database: pg.Client;

beforeAll(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'tessera-media-callbacks-'));
  receiver = await startReceiver();
  platform = await startTestPlatform((simulatorUrl) => ({
    MEDIA_DIR: mediaDir,
    MEDIA_POLL_INTERVAL_MS: '200',
    MEDIA_CALLBACK_MAX_ATTEMPTS: '3',
    // The simulator (for the media files) and the receiver, the only loopback hosts the guard lets through.
    FETCH_ALLOWED_HOSTS: `${new URL(simulatorUrl).host},${new URL(receiver.url).host}`,
  }));
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await new Promise((resolve) => receiver?.server.close(resolve));
  await rm(mediaDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function setBalance(userId: string, balance: number) {
  await database.query('update users set credits_balance = $2, credits_held = 0 where id = $1', [userId, balance]);
}

async function balance(key: string, userId: string) {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  return ((await response.json()) as { credits_remaining: number }).credits_remaining;
}

function create(kind: 'video' | 'music', key: string, body: unknown) {
  return platform.fetch(`/api/v1/media/${kind}`, { method: 'POST', key, body: JSON.stringify(body) });
}

async function createdId(kind: 'video' | 'music', key: string, body: unknown): Promise<string> {
  const response = await create(kind, key, body);
  expect(response.status).toBe(kind === 'video' ? 202 : 200);
  const job = (await response.json()) as { video_id?: string; music_id?: string };
  return (job.video_id ?? job.music_id)!;
}

type Job = Record<string, unknown> & { status: string };

async function getJob(kind: 'video' | 'music', key: string, id: string): Promise<Job> {
  const response = await platform.fetch(`/api/v1/media/${kind}/${id}`, { key });
  expect(response.status).toBe(200);
  return (await response.json()) as Job;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function secretOf(key: string): Promise<string> {
  const response = await platform.fetch('/api/v1/media/callback-secret', { key });
  expect(response.status).toBe(200);
  return ((await response.json()) as { secret: string }).secret;
}

const deliveriesTo = (path: string) => receiver.deliveries.filter((delivery) => delivery.path === path);

function verified(secret: string, delivery: Delivery): Record<string, unknown> {
  return new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as Record<
    string,
    unknown
  >;
}

describe('callback_url', () => {
  it('is POSTed signed when a video completes, retried after two 500s, and accepted exactly once', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    const secret = await secretOf(key);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The same secret on every read: created once, on first use.
    expect(await secretOf(key)).toBe(secret);

    const path = '/fail-2/video';
    const id = await createdId('video', key, { prompt: 'a heron [[takes 300ms]]', callback_url: receiver.url + path });
    await until('an accepted delivery', async () => deliveriesTo(path).find((delivery) => delivery.answered === 204));
    const job = await until('callback_status delivered', async () => {
      const seen = await getJob('video', key, id);
      return seen.callback_status === 'delivered' ? seen : undefined;
    });
    expect(job).toMatchObject({ status: 'completed', callback_url: receiver.url + path });

    const deliveries = deliveriesTo(path);
    expect(deliveries.map((delivery) => delivery.answered)).toEqual([500, 500, 204]);
    // One message: the same id on every attempt, each attempt signed afresh and verified by the official library.
    expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id']))).toEqual(new Set([`msg_${id}`]));
    for (const delivery of deliveries) {
      expect(delivery.headers['content-type']).toBe('application/json');
      const payload = verified(secret, delivery);
      const { callback_url: _url, callback_status: _status, ...asShown } = job;
      expect(payload).toEqual({ event: 'media.job.completed', ...asShown });
    }
    // A wrong secret or a tampered body does not verify.
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(() => verified(other, deliveries[2]!)).toThrow();
    expect(() =>
      verified(secret, { ...deliveries[2]!, body: deliveries[2]!.body.replace('completed', 'failed') }),
    ).toThrow();

    // Delivered once: nothing more arrives, and the row counts three attempts.
    await sleep(1500);
    expect(deliveriesTo(path)).toHaveLength(3);
    const { rows } = await database.query(
      'select callback_attempts, callback_delivered_at from media_jobs where id = $1',
      [id],
    );
    expect(rows[0]).toMatchObject({ callback_attempts: 3 });
    expect(rows[0].callback_delivered_at).toBeInstanceOf(Date);
  }, 60_000);

  it('gives up after MEDIA_CALLBACK_MAX_ATTEMPTS, recording callback_status failed; the job stays completed', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const path = '/down/music';
    const id = await createdId('music', key, { prompt: 'rain [[takes 300ms]]', callback_url: receiver.url + path });
    const job = await until('callback_status failed', async () => {
      const seen = await getJob('music', key, id);
      return seen.callback_status === 'failed' ? seen : undefined;
    });
    expect(job.status).toBe('completed');
    expect(deliveriesTo(path)).toHaveLength(3);
    const { rows } = await database.query('select callback_error from media_jobs where id = $1', [id]);
    expect(rows[0].callback_error).toContain('500');
    expect(await balance(key, user_id)).toBe(90);
  }, 60_000);

  it('reports a failed job, signed after a rotation by the new secret and, for a grace period, the previous one', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const before = await secretOf(key);
    const rotated = await platform.fetch('/api/v1/media/callback-secret/rotate', { method: 'POST', key });
    expect(rotated.status).toBe(200);
    const body = (await rotated.json()) as { secret: string; rotated_at: string; previous_secret_valid_until: string };
    expect(body.secret).not.toBe(before);
    expect(await secretOf(key)).toBe(body.secret);
    expect(new Date(body.previous_secret_valid_until).getTime()).toBeGreaterThan(Date.now());

    const path = '/fail-0/failed-music';
    const id = await createdId('music', key, {
      prompt: 'static [[takes 300ms]] [[fail]]',
      callback_url: receiver.url + path,
    });
    const delivery = await until('a delivery', async () => deliveriesTo(path)[0]);
    expect(verified(body.secret, delivery)).toMatchObject({
      event: 'media.job.failed',
      music_id: id,
      status: 'failed',
    });
    expect(verified(before, delivery)).toMatchObject({ event: 'media.job.failed' });
    expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(await balance(key, user_id)).toBe(100);
  }, 60_000);

  it('refuses a callback_url that is not http(s), has credentials or reaches a private address, charging nothing', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 500);
    for (const url of [
      'ftp://example.com/hook',
      'javascript:alert(1)',
      'not a url',
      'http://user:secret@example.com/hook',
      'http://127.0.0.1:9/hook',
      'http://[::1]/hook',
      'http://10.0.0.8/hook',
    ]) {
      for (const kind of ['video', 'music'] as const) {
        const response = await create(kind, key, { prompt: 'x', callback_url: url });
        expect(response.status).toBe(400);
        const { error } = (await response.json()) as { error: { type: string; param: string } };
        expect(error).toMatchObject({ type: 'invalid_request', param: 'callback_url' });
      }
    }
    expect(await balance(key, user_id)).toBe(500);
    const { rows } = await database.query('select 1 from media_jobs where user_id = $1', [user_id]);
    expect(rows).toHaveLength(0);
  });
});

describe('DELETE /api/v1/media/{video|music}/{id}', () => {
  it('cancels a processing video at the provider, refunds it once and calls back media.job.cancelled', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    const secret = await secretOf(key);
    const path = '/fail-0/cancelled';
    const id = await createdId('video', key, {
      prompt: 'a long take [[takes 60s]]',
      duration: 10,
      callback_url: receiver.url + path,
    });
    expect(await balance(key, user_id)).toBe(900);
    await until('processing', async () =>
      (await getJob('video', key, id)).status === 'processing' ? true : undefined,
    );

    const response = await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key });
    expect(response.status).toBe(200);
    const cancelled = (await response.json()) as Job;
    expect(cancelled).toMatchObject({ video_id: id, status: 'cancelled', credits_used: 0 });
    expect(await getJob('video', key, id)).toMatchObject({ status: 'cancelled' });
    expect(await balance(key, user_id)).toBe(1000);

    // The provider's prediction is cancelled (asked of the simulator as Replicate's API answers it).
    const { rows: jobRows } = await database.query(
      `select result->>'providerJobId' as prediction from media_jobs where id = $1`,
      [id],
    );
    const prediction = await fetch(`${platform.simulatorUrl}/v1/predictions/${jobRows[0].prediction}`, {
      headers: { authorization: 'Bearer simulator' },
    });
    expect(((await prediction.json()) as { status: string }).status).toBe('canceled');

    const delivery = await until('the cancellation callback', async () => deliveriesTo(path)[0]);
    expect(verified(secret, delivery)).toMatchObject({
      event: 'media.job.cancelled',
      video_id: id,
      status: 'cancelled',
    });

    // Refunded exactly once, and a second DELETE is a conflict that changes nothing.
    const again = await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { type: string } }).error.type).toBe('conflict');
    await sleep(500);
    const { rows: ledger } = await database.query(`select kind from credit_ledger where workflow_id = $1 order by id`, [
      `media-video-${id}`,
    ]);
    expect(ledger.map((row: { kind: string }) => row.kind)).toEqual(['reserve', 'release']);
    expect(await balance(key, user_id)).toBe(1000);
    expect(deliveriesTo(path)).toHaveLength(1);
  }, 60_000);

  it('cancels processing music too', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const id = await createdId('music', key, { prompt: 'slow [[takes 60s]]', duration: 60 });
    expect(await balance(key, user_id)).toBe(60);
    const response = await platform.fetch(`/api/v1/media/music/${id}`, { method: 'DELETE', key });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ music_id: id, status: 'cancelled', type: 'music', duration: 60 });
    expect(await balance(key, user_id)).toBe(100);
  }, 60_000);

  it('cancels at once while failed polls are being retried, without waiting for them', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const id = await createdId('music', key, { prompt: 'stubborn [[takes 60s]] [[poll-error 50]]' });
    // Long enough for the poll activity to be in its retries (1 s, 2 s, 4 s, … apart).
    await sleep(2500);
    const started = Date.now();
    const response = await platform.fetch(`/api/v1/media/music/${id}`, { method: 'DELETE', key });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(((await response.json()) as Job).status).toBe('cancelled');
    expect(await balance(key, user_id)).toBe(100);
  }, 60_000);

  it("cancels a video whose provider job is still being created, and then cancels the provider's job", async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    // The next Replicate request (this job's create) answers after 2.5 s.
    await platform.simulator.addFault({ match: { protocol: 'replicate' }, times: 1, fault: { latency_ms: 2500 } });
    try {
      const id = await createdId('video', key, { prompt: 'slow start [[takes 60s]]' });
      await sleep(300);
      const started = Date.now();
      const response = await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key });
      expect(response.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(((await response.json()) as Job).status).toBe('cancelled');
      expect(await balance(key, user_id)).toBe(1000);
      // The create finishes after the cancel: it finds the job cancelled and cancels the prediction it started.
      const cancelCall = await until('the provider cancel', async () => {
        const { last } = await platform.simulator.requests();
        return last && /^\/v1\/predictions\/[^/]+\/cancel$/.test(last.path) ? last.path : undefined;
      });
      const prediction = await fetch(`${platform.simulatorUrl}${cancelCall.replace(/\/cancel$/, '')}`, {
        headers: { authorization: 'Bearer simulator' },
      });
      expect(((await prediction.json()) as { status: string }).status).toBe('canceled');
      expect((await getJob('video', key, id)).status).toBe('cancelled');
    } finally {
      await platform.simulator.clearFaults();
    }
  }, 60_000);

  it('lets exactly one of cancelled and completed win when a cancel meets the end, charging or refunding once', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    // Cancels sent across each job's end (the provider finishes after 500 ms; polls every 200 ms).
    const outcomes = await Promise.all(
      [200, 500, 700, 900, 1200, 1600, 2200, 3000].map(async (delayMs) => {
        const id = await createdId('video', key, { prompt: 'a close call [[takes 500ms]]' });
        await sleep(delayMs);
        const response = await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key });
        const answered = response.status;
        await response.arrayBuffer();
        const job = await until('the end', async () => {
          const seen = await getJob('video', key, id);
          return ['completed', 'cancelled', 'failed'].includes(seen.status) ? seen : undefined;
        });
        return { id, answered, status: job.status };
      }),
    );
    await sleep(500);
    let charged = 0;
    for (const { id, answered, status } of outcomes) {
      const { rows } = await database.query(`select kind from credit_ledger where workflow_id = $1 order by id`, [
        `media-video-${id}`,
      ]);
      const kinds = rows.map((row: { kind: string }) => row.kind);
      if (answered === 200) {
        expect(status).toBe('cancelled');
        expect(kinds).toEqual(['reserve', 'release']);
      } else {
        expect(answered).toBe(409);
        expect(status).toBe('completed');
        expect(kinds).toEqual(['reserve', 'settle']);
        charged += 50;
      }
    }
    expect(await balance(key, user_id)).toBe(1000 - charged);
  }, 60_000);

  it("answers 409 on a completed job, 404 on another user's or a missing one", async () => {
    const owner = await platform.createKey();
    await setBalance(owner.user_id, 500);
    const other = await platform.createKey();
    const id = await createdId('video', owner.key, { prompt: 'quick [[takes 200ms]]' });
    await until('completed', async () =>
      (await getJob('video', owner.key, id)).status === 'completed' ? true : undefined,
    );
    const response = await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key: owner.key });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('conflict');
    expect((await getJob('video', owner.key, id)).status).toBe('completed');
    expect((await platform.fetch(`/api/v1/media/video/${id}`, { method: 'DELETE', key: other.key })).status).toBe(404);
    expect((await platform.fetch(`/api/v1/media/music/${id}`, { method: 'DELETE', key: owner.key })).status).toBe(404);
    expect((await platform.fetch('/api/v1/media/video/missing', { method: 'DELETE', key: owner.key })).status).toBe(
      404,
    );
    expect(await balance(owner.key, owner.user_id)).toBe(450);
  }, 60_000);
});

describe('GET /api/v1/media/jobs', () => {
  type Page = {
    object: string;
    data: Array<Record<string, unknown> & { id: string; kind: string; status: string }>;
    has_more: boolean;
    next_cursor: string | null;
  };

  async function list(key: string, query = ''): Promise<Page> {
    const response = await platform.fetch(`/api/v1/media/jobs${query}`, { key });
    expect(response.status).toBe(200);
    return (await response.json()) as Page;
  }

  it("lists the caller's jobs of every kind newest first, paged by cursor and filtered, and no one else's", async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    const other = await platform.createKey();
    await setBalance(other.user_id, 1000);
    const ids: string[] = [];
    ids.push(await createdId('video', key, { prompt: 'one [[takes 200ms]]' }));
    ids.push(await createdId('music', key, { prompt: 'two [[takes 200ms]]' }));
    ids.push(await createdId('music', key, { prompt: 'three [[takes 200ms]] [[fail]]' }));
    ids.push(await createdId('video', key, { prompt: 'four [[takes 200ms]]' }));
    const foreign = await createdId('video', other.key, { prompt: 'theirs [[takes 200ms]]' });
    await until('every job ended', async () => {
      const page = await list(key);
      return page.data.every((job) => job.status === 'completed' || job.status === 'failed') ? true : undefined;
    });

    const all = await list(key);
    expect(all.object).toBe('list');
    expect(all.data.map((job) => job.id)).toEqual([...ids].reverse());
    expect(all.has_more).toBe(false);
    expect(all.next_cursor).toBeNull();
    expect(all.data.some((job) => job.id === foreign)).toBe(false);
    const [newest] = all.data;
    expect(newest).toMatchObject({
      id: ids[3],
      kind: 'video',
      status: 'completed',
      engine: 'replicate',
      credits_used: 50,
    });
    expect(Object.keys(newest!).sort()).toEqual(
      ['completed_at', 'created_at', 'credits_used', 'engine', 'id', 'kind', 'status', 'url'].sort(),
    );
    expect((await platform.fetch(String(newest!.url))).headers.get('content-type')).toBe('video/mp4');
    const failed = all.data.find((job) => job.id === ids[2])!;
    expect(failed).toMatchObject({ kind: 'music', status: 'failed', credits_used: 0 });
    expect(failed.error).toBeTruthy();
    expect(failed.url).toBeUndefined();

    // Pages of two: after= and cursor= take the previous page's next_cursor.
    const first = await list(key, '?limit=2');
    expect(first.data.map((job) => job.id)).toEqual([ids[3], ids[2]]);
    expect(first).toMatchObject({ has_more: true, next_cursor: ids[2] });
    const second = await list(key, `?limit=2&after=${first.next_cursor}`);
    expect(second.data.map((job) => job.id)).toEqual([ids[1], ids[0]]);
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    expect((await list(key, `?limit=2&cursor=${first.next_cursor}`)).data.map((job) => job.id)).toEqual([
      ids[1],
      ids[0],
    ]);

    expect((await list(key, '?kind=music')).data.map((job) => job.id)).toEqual([ids[2], ids[1]]);
    expect((await list(key, '?status=failed')).data.map((job) => job.id)).toEqual([ids[2]]);
    expect((await list(key, '?kind=video&status=completed&limit=1')).data.map((job) => job.id)).toEqual([ids[3]]);
    expect((await list(key, '?kind=tts')).data).toEqual([]);
    expect((await list(other.key)).data.map((job) => job.id)).toEqual([foreign]);
  }, 60_000);

  it('refuses a bad parameter, naming it', async () => {
    const owner = await platform.createKey();
    const { key } = await platform.createKey();
    await setBalance(owner.user_id, 500);
    const theirs = await createdId('music', owner.key, { prompt: 'private [[takes 200ms]]' });
    for (const [query, param] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?kind=hologram', 'kind'],
      ['?status=done', 'status'],
      ['?after=not%20an%20id', 'after'],
      // Another user's job is no cursor of yours.
      [`?cursor=${theirs}`, 'cursor'],
    ] as const) {
      const response = await platform.fetch(`/api/v1/media/jobs${query}`, { key });
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { type: string; param: string } };
      expect(error).toMatchObject({ type: 'invalid_request', param });
    }
    expect((await platform.fetch('/api/v1/media/jobs')).status).toBe(401);
  });
});
