/**
 * Media files through HTTP on both stores (real Postgres, real Temporal; the S3 store is an S3-compatible server on
 * loopback, gofakes3): a speech job's MP3 is stored (in the bucket, or under MEDIA_DIR) and served at its stable URL
 * with its type and length; a music job shows its URL. With a TTL of a few seconds, the file then answers 404 while it
 * is still stored and the job shows `expired: true` without a URL; the sweep, started through its Temporal Schedule,
 * deletes it and marks the jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Client, Connection } from '@temporalio/client';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { RunningS3Server } from '../../scripts/lib/s3-server.ts';
import { mediaSweepScheduleId } from '../../worker/schedules.ts';
import {
  s3ServerStartTimeoutMs,
  s3Settings,
  startTestS3Server,
  testBucket,
  testS3Client,
} from '../helpers/s3-server.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

/** Seconds a file is served: long enough for a speech and a music job to be fetched, short enough to wait out. */
const ttlSeconds = 8;

let connection: Connection;
let temporal: Client;
beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  temporal = new Client({ connection });
});
afterAll(async () => {
  await connection?.close();
});

/** Where a backend's objects are looked at behind the gateway's back. */
interface Backend {
  settings(): Record<string, string>;
  has(key: string): Promise<boolean>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

function s3Backend(): Backend {
  let server: RunningS3Server;
  let client: S3Client;
  return {
    async start() {
      server = await startTestS3Server();
      client = testS3Client(server.url);
    },
    settings: () => s3Settings(server.url),
    async has(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: testBucket, Key: key }));
        return true;
      } catch (error) {
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw error;
      }
    },
    async stop() {
      client?.destroy();
      await server?.stop();
    },
  };
}

function localBackend(): Backend {
  let directory: string;
  return {
    async start() {
      directory = await mkdtemp(join(tmpdir(), 'tessera-media-storage-'));
    },
    settings: () => ({ MEDIA_DIR: directory }),
    has: (key) =>
      access(join(directory, key)).then(
        () => true,
        () => false,
      ),
    async stop() {
      await rm(directory, { recursive: true, force: true });
    },
  };
}

describe.each([
  ['an S3-compatible bucket', s3Backend],
  ['the local disk', localBackend],
])('media files in %s', (_label, makeBackend) => {
  const backend = makeBackend();
  let platform: TestPlatform;
  let database: pg.Client;
  beforeAll(async () => {
    await backend.start();
    platform = await startTestPlatform({
      ...backend.settings(),
      MEDIA_FILE_TTL_DAYS: String(ttlSeconds / 86_400),
      MEDIA_POLL_INTERVAL_MS: '200',
    });
    database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
  }, s3ServerStartTimeoutMs);
  afterAll(async () => {
    await database?.end();
    await platform?.close();
    await backend.stop();
  });

  /** Runs the sweep the way the schedule does: triggers the platform's schedule and waits for the run it started. */
  async function sweepThroughSchedule(): Promise<{ deletedFiles: number; expiredJobs: number }> {
    const schedule = temporal.schedule.getHandle(mediaSweepScheduleId(platform.environment.TEMPORAL_TASK_QUEUE!));
    const before = (await schedule.describe()).info.recentActions.length;
    await schedule.trigger();
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      const actions = (await schedule.describe()).info.recentActions;
      if (actions.length > before) {
        const { workflowId, firstExecutionRunId } = actions.at(-1)!.action.workflow;
        return temporal.workflow.getHandle(workflowId, firstExecutionRunId).result();
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the media sweep schedule started no run');
  }

  async function resultOf(jobId: string) {
    const { rows } = await database.query('select result from media_jobs where id = $1', [jobId]);
    return rows[0].result as { fileName: string; expired?: boolean };
  }

  it('stores a speech result, serves it at its URL, expires it, and the scheduled sweep deletes it', async () => {
    const { key } = await platform.createKey();
    const spoken = await platform.fetch('/api/v1/media/tts', {
      method: 'POST',
      key,
      body: JSON.stringify({ text: 'こんにちは、テッセラです', voice: 'female_calm' }),
    });
    expect(spoken.status).toBe(200);
    expect(spoken.headers.get('x-media-engine')).toBe('espeak-ng');
    const mp3 = new Uint8Array(await spoken.arrayBuffer());
    const speechJob = spoken.headers.get('x-media-job-id')!;
    const { fileName } = await resultOf(speechJob);
    expect(await backend.has(`results/${fileName}`)).toBe(true);

    const served = await fetch(`${platform.gateway.url}/api/v1/media/files/${fileName}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('audio/mpeg');
    expect(served.headers.get('content-length')).toBe(String(mp3.length));
    expect(served.headers.get('cache-control')).toMatch(/max-age=[0-8],/);
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(mp3);

    const music = await platform.fetch('/api/v1/media/music', {
      method: 'POST',
      key,
      body: JSON.stringify({ prompt: 'a short jingle [[takes 200ms]]' }),
    });
    const { music_id } = (await music.json()) as { music_id: string };
    const getMusic = async () =>
      (await (await platform.fetch(`/api/v1/media/music/${music_id}`, { key })).json()) as {
        status: string;
        audio_url?: string;
        expired?: boolean;
      };
    let job = await getMusic();
    for (const deadline = Date.now() + 5_000; job.status === 'processing' && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      job = await getMusic();
    }
    expect(job).toMatchObject({ status: 'completed', audio_url: expect.stringMatching(/^\/api\/v1\/media\/files\//) });
    expect(job.expired).toBeUndefined();
    const musicFile = job.audio_url!.split('/').at(-1)!;

    // A sweep now deletes nothing of these: they are fresh.
    await sweepThroughSchedule();
    expect(await backend.has(`results/${fileName}`)).toBe(true);

    // Past the TTL: 404, although the sweep has not run since and the files are still stored. The music job's row
    // finished after its file was stored, so it shows `expired` a moment after the file stopped being served.
    const eventually = async (check: () => Promise<boolean>) => {
      for (const deadline = Date.now() + (ttlSeconds + 5) * 1000; !(await check());) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    const gone = (path: string) => async () => {
      const response = await fetch(`${platform.gateway.url}${path}`);
      await response.arrayBuffer();
      return response.status === 404;
    };
    await eventually(gone(`/api/v1/media/files/${fileName}`));
    await eventually(gone(job.audio_url!));
    await eventually(async () => (await getMusic()).expired === true);
    expect(await backend.has(`results/${fileName}`)).toBe(true);
    expect(await backend.has(`results/${musicFile}`)).toBe(true);
    expect((await getMusic()).audio_url).toBeUndefined();

    const swept = await sweepThroughSchedule();
    expect(swept.deletedFiles).toBeGreaterThanOrEqual(2);
    expect(swept.expiredJobs).toBe(2);
    expect(await backend.has(`results/${fileName}`)).toBe(false);
    expect(await backend.has(`results/${musicFile}`)).toBe(false);
    expect(await resultOf(speechJob)).toMatchObject({ fileName, expired: true });
    expect((await fetch(`${platform.gateway.url}/api/v1/media/files/${fileName}`)).status).toBe(404);
    const after = await getMusic();
    expect(after).toMatchObject({ status: 'completed', expired: true });
    expect(after.audio_url).toBeUndefined();
    // Idempotent: nothing left to delete or mark.
    expect(await sweepThroughSchedule()).toEqual({ deletedFiles: 0, expiredJobs: 0 });
  }, 60_000);
});
