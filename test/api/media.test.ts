/**
 * Media endpoints through HTTP (real Postgres, real Temporal, providers played by the simulator): speech through the
 * official openai SDK, /tts with its engine header and credits, refusals, fallback to espeak-ng, result files.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let mediaDir: string;
beforeAll(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'tessera-media-'));
  platform = await startTestPlatform({ MEDIA_DIR: mediaDir, MEDIA_POLL_INTERVAL_MS: '200' });
});
beforeEach(async () => {
  await platform.simulator.clearFaults();
});
afterAll(async () => {
  await platform.close();
  await rm(mediaDir, { recursive: true, force: true });
});

/** An MP3 starts with an ID3 tag or an MPEG frame sync. */
function isMp3(bytes: Uint8Array): boolean {
  const id3 = bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33;
  const sync = bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0;
  return bytes.length > 100 && (id3 || sync);
}

async function credits(userId: string, key: string) {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  return ((await response.json()) as { credits_remaining: number; credits_used: number }).credits_remaining;
}

async function tts(key: string, body: unknown) {
  return platform.fetch('/api/v1/media/tts', { method: 'POST', key, body: JSON.stringify(body) });
}

describe('POST /v1/audio/speech', () => {
  it('answers MP3 through the openai SDK and charges the 1-5 rule', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const response = await platform.openai(key).audio.speech.create({
      model: 'tts-1',
      input: 'Hello from Tessera',
      voice: 'nova',
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(response.headers.get('x-media-engine')).toBe('openai');
    expect(isMp3(bytes)).toBe(true);
    expect(await credits(user_id, key)).toBe(before - 1);
  });

  it('refuses formats other than mp3, naming the field', async () => {
    const { key } = await platform.createKey();
    const response = await platform.fetch('/v1/audio/speech', {
      method: 'POST',
      key,
      body: JSON.stringify({ model: 'tts-1', input: 'hi', voice: 'nova', response_format: 'wav' }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('response_format');
  });
});

describe('POST /api/v1/media/tts', () => {
  it('answers MP3 from the voice engine, charges 1 credit per 100 characters, and stores a job', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(5); // 225 characters
    const response = await tts(key, { text: text, voice: 'alloy', speed: 1.5 });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(response.headers.get('x-media-engine')).toBe('openai');
    expect(response.headers.get('x-credits-used')).toBe('3');
    expect(isMp3(new Uint8Array(await response.arrayBuffer()))).toBe(true);
    expect(await credits(user_id, key)).toBe(before - 3);

    const database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
    try {
      const { rows } = await database.query('select * from media_jobs where id = $1', [
        response.headers.get('x-media-job-id'),
      ]);
      expect(rows[0]).toMatchObject({ kind: 'tts', user_id, status: 'completed', engine: 'openai', credits: 3 });
      const name = (rows[0].result as { fileName: string }).fileName;
      expect(name).toMatch(/^[A-Za-z0-9_-]{43}\.mp3$/);
      const file = await fetch(`${platform.gateway.url}/api/v1/media/files/${name}`);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('audio/mpeg');
      expect(isMp3(new Uint8Array(await file.arrayBuffer()))).toBe(true);
    } finally {
      await database.end();
    }
    expect((await fetch(`${platform.gateway.url}/api/v1/media/files/${'a'.repeat(43)}.mp3`)).status).toBe(404);
  });

  it('speaks the default Japanese voice with ElevenLabs (engine A)', async () => {
    const { key } = await platform.createKey();
    const response = await tts(key, { text: 'こんにちは' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-media-engine')).toBe('elevenlabs');
  });

  it.each([
    ['text', { text: 'x'.repeat(4097) }],
    ['speed', { text: 'hi', speed: 5 }],
    ['voice', { text: 'hi', voice: 'darth' }],
  ])('refuses a bad body, naming %s', async (field, body) => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const response = await tts(key, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe(field);
    expect(await credits(user_id, key)).toBe(before);
  });

  it('answers 402 when short of credits, charging nothing', async () => {
    const { key, user_id } = await platform.createKey();
    const database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
    try {
      await database.query('update users set credits_balance = 2, credits_held = 0 where id = $1', [user_id]);
    } finally {
      await database.end();
    }
    const response = await tts(key, { text: 'y'.repeat(300), voice: 'nova' });
    expect(response.status).toBe(402);
    expect(await credits(user_id, key)).toBe(2);
  });

  it('falls back to espeak-ng when the hosted speech engines fail', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    await platform.simulator.addFault({ match: { protocol: 'openai-media' }, fault: { status: 500 } });
    await platform.simulator.addFault({ match: { protocol: 'elevenlabs' }, fault: { status: 500 } });
    const response = await tts(key, { text: 'Fallback works', voice: 'nova' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-media-engine')).toBe('espeak-ng');
    expect(isMp3(new Uint8Array(await response.arrayBuffer()))).toBe(true);
    expect(await credits(user_id, key)).toBe(before - 1);
  });

  it('refunds a job no engine could serve', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    // espeak-ng refuses kanji, and the hosted engines fail.
    await platform.simulator.addFault({ match: { protocol: 'openai-media' }, fault: { status: 500 } });
    await platform.simulator.addFault({ match: { protocol: 'elevenlabs' }, fault: { status: 500 } });
    const response = await tts(key, { text: '東京' });
    expect(response.status).toBe(400);
    expect(await credits(user_id, key)).toBe(before);
    const account = await platform.fetch(`/api/v1/account/${user_id}`, { key });
    expect(((await account.json()) as { credits_used: number }).credits_used).toBe(0);
  });
});
