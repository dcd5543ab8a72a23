/**
 * Asynchronous media jobs through HTTP (real Postgres, real Temporal, Replicate played by the simulator): a video
 * moves queued → processing → completed with its MP4 served and its credits held then charged once; a failed
 * prediction refunds; failed polls are survived; refusals (400 naming the field, 402) start nothing. Music the same
 * way, answering `processing` at once and an MP3 when completed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let mediaDir: string;
beforeAll(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'tessera-media-jobs-'));
  platform = await startTestPlatform({ MEDIA_DIR: mediaDir, MEDIA_POLL_INTERVAL_MS: '200' });
});
afterAll(async () => {
  await platform.close();
  await rm(mediaDir, { recursive: true, force: true });
});

type VideoJob = {
  video_id: string;
  status: string;
  video_url?: string;
  url?: string;
  thumbnail_url?: string;
  duration: number;
  mode: string;
  created_at: string;
  completed_at?: string;
  error?: string;
  credits_used: number;
  engine: string;
};

async function account(userId: string, key: string) {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  return (await response.json()) as { credits_remaining: number; credits_used: number };
}

async function setBalance(userId: string, balance: number) {
  const database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  try {
    await database.query('update users set credits_balance = $2, credits_held = 0 where id = $1', [userId, balance]);
  } finally {
    await database.end();
  }
}

function createVideo(key: string, body: unknown) {
  return platform.fetch('/api/v1/media/video', { method: 'POST', key, body: JSON.stringify(body) });
}

async function getVideo(key: string, id: string) {
  const response = await platform.fetch(`/api/v1/media/video/${id}`, { key });
  expect(response.status).toBe(200);
  return (await response.json()) as VideoJob;
}

type MusicJob = { music_id: string; status: string; audio_url?: string; duration: number; error?: string };

async function getMusic(key: string, id: string) {
  const response = await platform.fetch(`/api/v1/media/music/${id}`, { key });
  expect(response.status).toBe(200);
  return (await response.json()) as MusicJob;
}

function createMusic(key: string, body: unknown) {
  return platform.fetch('/api/v1/media/music', { method: 'POST', key, body: JSON.stringify(body) });
}

/** Polls the job until it ends, collecting every status seen. */
async function untilEnded(
  key: string,
  id: string,
  seen: Set<string>,
  timeoutMs = 30_000,
  kind: 'video' | 'music' = 'video',
): Promise<VideoJob> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = kind === 'video' ? await getVideo(key, id) : ((await getMusic(key, id)) as unknown as VideoJob);
    seen.add(job.status);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > deadline) throw new Error(`video ${id} still ${job.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('POST /api/v1/media/video', () => {
  it('answers 202 queued, then moves through processing to completed with an MP4, charging once', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    const response = await createVideo(key, { prompt: 'a cat surfing [[takes 1s]]', duration: 10 });
    expect(response.status).toBe(202);
    const created = (await response.json()) as { video_id: string; status: string; estimated_time: number };
    expect(created).toMatchObject({ status: 'queued', credits_used: 100 });
    expect(created.estimated_time).toBeGreaterThan(0);
    // Held at once: the balance already shows the price.
    expect((await account(user_id, key)).credits_remaining).toBe(900);

    const seen = new Set<string>();
    const job = await untilEnded(key, created.video_id, seen);
    expect(job).toMatchObject({
      video_id: created.video_id,
      status: 'completed',
      duration: 10,
      mode: 'standard',
      engine: 'replicate',
      credits_used: 100,
    });
    expect(seen.has('processing')).toBe(true);
    expect(new Date(job.completed_at!).getTime()).toBeGreaterThanOrEqual(new Date(job.created_at).getTime());
    expect(job.url).toBe(job.video_url);

    const file = await platform.fetch(job.video_url!);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    const bytes = new Uint8Array(await file.arrayBuffer());
    expect(new TextDecoder().decode(bytes.subarray(4, 8))).toBe('ftyp');
    // The thumbnail is the video's first frame (ffmpeg, which npm test installs), at most 640 px wide.
    const thumbnail = await platform.fetch(job.thumbnail_url!);
    expect(thumbnail.headers.get('content-type')).toBe('image/jpeg');
    expect(await sharp(Buffer.from(await thumbnail.arrayBuffer())).metadata()).toMatchObject({
      format: 'jpeg',
      width: 320,
      height: 180,
    });

    // Charged once: the hold became the charge, nothing more.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await account(user_id, key);
    expect(after.credits_remaining).toBe(900);
  });

  it('fails a refused prediction and refunds the hold', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 500);
    const response = await createVideo(key, { prompt: 'doomed [[takes 1s]] [[fail]]', mode: 'pro' });
    expect(response.status).toBe(202);
    const { video_id, credits_used } = (await response.json()) as { video_id: string; credits_used: number };
    expect(credits_used).toBe(150);
    const job = await untilEnded(key, video_id, new Set());
    expect(job.status).toBe('failed');
    expect(job.error).toBeTruthy();
    expect(job.video_url).toBeUndefined();
    expect((await account(user_id, key)).credits_remaining).toBe(500);
  });

  it('survives failed polls', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 500);
    const response = await createVideo(key, { prompt: 'patient [[takes 1s]] [[poll-error 2]]' });
    const { video_id } = (await response.json()) as { video_id: string };
    const job = await untilEnded(key, video_id, new Set(), 60_000);
    expect(job.status).toBe('completed');
    expect((await account(user_id, key)).credits_remaining).toBe(450);
  }, 90_000);

  it("hides another user's job", async () => {
    const owner = await platform.createKey();
    await setBalance(owner.user_id, 500);
    const other = await platform.createKey();
    const response = await createVideo(owner.key, { prompt: 'mine [[takes 1s]]' });
    const { video_id } = (await response.json()) as { video_id: string };
    expect((await platform.fetch(`/api/v1/media/video/${video_id}`, { key: other.key })).status).toBe(404);
    expect((await platform.fetch('/api/v1/media/video/nothing-here', { key: owner.key })).status).toBe(404);
  });

  it('refuses a bad duration or mode, naming the field', async () => {
    const { key } = await platform.createKey();
    for (const [body, param] of [
      [{ prompt: 'x', duration: 7 }, 'duration'],
      [{ prompt: 'x', mode: 'ultra' }, 'mode'],
      [{ duration: 5 }, 'prompt'],
    ] as const) {
      const response = await createVideo(key, body);
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { type: string; param: string } };
      expect(error).toMatchObject({ type: 'invalid_request', param });
    }
  });

  it('answers 402 when short of credits, starting nothing', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 49);
    const response = await createVideo(key, { prompt: 'too dear' });
    expect(response.status).toBe(402);
    expect((await account(user_id, key)).credits_remaining).toBe(49);
    const database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
    try {
      const { rows } = await database.query('select 1 from media_jobs where user_id = $1', [user_id]);
      expect(rows).toHaveLength(0);
    } finally {
      await database.end();
    }
  });
});

describe('Idempotency-Key on video and music', () => {
  it('answers the same job to repeats, twins included, charged once; another request with the key is a 409', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 1000);
    const keyed = (path: string, body: unknown, idempotencyKey: string) =>
      platform
        .fetch(path, {
          method: 'POST',
          key,
          body: JSON.stringify(body),
          headers: { 'idempotency-key': idempotencyKey },
        })
        .then(async (response) => ({
          status: response.status,
          json: (await response.json()) as Record<string, string>,
        }));
    const body = { prompt: 'a paper boat [[takes 400ms]]' };
    const [first, twin] = await Promise.all([
      keyed('/api/v1/media/video', body, 'boat'),
      keyed('/api/v1/media/video', body, 'boat'),
    ]);
    expect([first.status, twin.status]).toEqual([202, 202]);
    expect(twin.json.video_id).toBe(first.json.video_id);
    await untilEnded(key, first.json.video_id!, new Set());
    const later = await keyed('/api/v1/media/video', body, 'boat');
    expect(later.json).toMatchObject({ video_id: first.json.video_id, status: 'completed', credits_used: 50 });
    const music = await keyed('/api/v1/media/music', { prompt: 'a sea shanty' }, 'boat');
    expect(music.json.music_id).not.toBe(first.json.video_id);
    expect((await keyed('/api/v1/media/music', { prompt: 'a sea shanty' }, 'boat')).json.music_id).toBe(
      music.json.music_id,
    );
    expect((await account(user_id, key)).credits_remaining).toBe(1000 - 50 - 10);
    const conflict = await keyed('/api/v1/media/video', { prompt: 'a stone boat' }, 'boat');
    expect(conflict).toMatchObject({ status: 409, json: { error: { type: 'conflict', param: 'Idempotency-Key' } } });
    const database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
    try {
      const { rows } = await database.query('select kind from media_jobs where user_id = $1 order by kind', [user_id]);
      expect(rows).toEqual([{ kind: 'music' }, { kind: 'video' }]);
    } finally {
      await database.end();
    }
  });
});

describe('POST /api/v1/media/music', () => {
  it('answers processing, then completes with an MP3, charging by duration', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const response = await createMusic(key, { prompt: 'calm piano [[takes 1s]]', duration: 30 });
    expect(response.status).toBe(200);
    const created = (await response.json()) as { music_id: string; status: string; credits_used: number };
    expect(created).toMatchObject({ status: 'processing', credits_used: 20 });
    expect((await account(user_id, key)).credits_remaining).toBe(80);

    const job = (await untilEnded(key, created.music_id, new Set(), 30_000, 'music')) as unknown as MusicJob;
    expect(job).toMatchObject({ music_id: created.music_id, status: 'completed', duration: 30 });
    const file = await platform.fetch(job.audio_url!);
    expect(file.headers.get('content-type')).toBe('audio/mpeg');
    const bytes = new Uint8Array(await file.arrayBuffer());
    const id3 = bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33;
    const sync = bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0;
    expect(id3 || sync).toBe(true);
    expect((await account(user_id, key)).credits_remaining).toBe(80);
  });

  it('refunds a failed job, refuses a bad duration, and hides the job from others', async () => {
    const { key, user_id } = await platform.createKey();
    await setBalance(user_id, 100);
    const other = await platform.createKey();
    const bad = await createMusic(key, { prompt: 'x', duration: 20 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('duration');

    const response = await createMusic(key, { prompt: 'noise [[takes 1s]] [[fail]]', duration: 60 });
    const { music_id, credits_used } = (await response.json()) as { music_id: string; credits_used: number };
    expect(credits_used).toBe(40);
    expect((await platform.fetch(`/api/v1/media/music/${music_id}`, { key: other.key })).status).toBe(404);
    // A music id is not a video id.
    expect((await platform.fetch(`/api/v1/media/video/${music_id}`, { key })).status).toBe(404);
    const job = (await untilEnded(key, music_id, new Set(), 30_000, 'music')) as unknown as MusicJob;
    expect(job.status).toBe('failed');
    expect(job.audio_url).toBeUndefined();
    expect((await account(user_id, key)).credits_remaining).toBe(100);
  });
});
