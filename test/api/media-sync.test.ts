/**
 * The synchronous media endpoints through HTTP (real Postgres, real Temporal, hosted engines played by the simulator,
 * local engines for real): images, background removal (hosted, and the local engine on a synthetic image with a
 * known subject), upscaling, OCR reading back English and Japanese made here, sound effects, speech-to-text on a
 * multipart upload; `image_url` fetched through the URL guard; every bad input a 400 naming its field that charges
 * nothing; a kind without an engine a 503.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { simulatedMp3 } from '../../simulator/media-files.ts';
import { discOnPlainBackground, englishImage, japaneseImage } from '../helpers/media-images.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let mediaDir: string;
/** A loopback image server, allowed by FETCH_ALLOWED_HOSTS: `/disc.png`, `/text.txt`, `/to-private` (a redirect). */
let images: Server;
let imagesHost: string;
let disc: Buffer;

beforeAll(async () => {
  disc = await discOnPlainBackground();
  images = createServer((request, response) => {
    if (request.url === '/disc.png') {
      response.writeHead(200, { 'content-type': 'image/png' }).end(disc);
    } else if (request.url === '/text.txt') {
      response.writeHead(200, { 'content-type': 'image/png' }).end('this is not an image at all');
    } else if (request.url === '/to-private') {
      response.writeHead(302, { location: 'http://127.0.0.2:9/secret.png' }).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imagesHost = `127.0.0.1:${(images.address() as AddressInfo).port}`;
  mediaDir = await mkdtemp(join(tmpdir(), 'tessera-media-sync-'));
  platform = await startTestPlatform({ MEDIA_DIR: mediaDir, FETCH_ALLOWED_HOSTS: imagesHost });
});
beforeEach(async () => {
  await platform.simulator.clearFaults();
});
afterAll(async () => {
  await platform.close();
  await new Promise((resolve) => images.close(resolve));
  await rm(mediaDir, { recursive: true, force: true });
});

type Answer = Record<string, unknown> & { error?: { type: string; param?: string; message: string } };

async function post(key: string, path: string, body: unknown): Promise<{ status: number; json: Answer }> {
  const response = await platform.fetch(`/api/v1/media/${path}`, { method: 'POST', key, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Answer };
}

async function credits(userId: string, key: string): Promise<number> {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  return ((await response.json()) as { credits_remaining: number }).credits_remaining;
}

async function download(path: unknown): Promise<Buffer> {
  const response = await platform.fetch(String(path));
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** The alpha of the pixel at (x, y) of a PNG, and its red channel. */
async function pixel(png: Buffer, x: number, y: number): Promise<{ red: number; alpha: number }> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const offset = (y * info.width + x) * 4;
  return { red: data[offset]!, alpha: data[offset + 3]! };
}

const base64 = (bytes: Buffer) => bytes.toString('base64');

describe('POST /api/v1/media/image', () => {
  it('draws with the default model on Replicate, charges 5 and stores the PNG', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const { status, json } = await post(key, 'image', { prompt: 'a lighthouse at dawn' });
    expect(status).toBe(200);
    expect(json).toMatchObject({ model: 'flux-schnell', credits_used: 5, engine: 'replicate' });
    const [image] = json.images as Array<{ url: string }>;
    const png = await download(image!.url);
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 1024, height: 1024 });
    expect(await credits(user_id, key)).toBe(before - 5);
    const database = new pg.Client({ connectionString: platform.databaseUrl });
    await database.connect();
    try {
      const { rows } = await database.query(
        'select kind, status, engine, credits, request from media_jobs where id = $1 and user_id = $2',
        [json.job_id, user_id],
      );
      // Created when the API accepted it, finished when the prediction (about 1.5 s) was stored.
      const [times] = (
        await database.query(
          'select finished_at - created_at > interval $$1 second$$ as took from media_jobs where id = $1',
          [json.job_id],
        )
      ).rows as Array<{ took: boolean }>;
      expect(times).toEqual({ took: true });
      expect(rows).toEqual([
        {
          kind: 'image',
          status: 'completed',
          engine: 'replicate',
          credits: 5,
          request: {
            kind: 'image',
            prompt: 'a lighthouse at dawn',
            model: 'flux-schnell',
            size: '1024x1024',
            quality: 'standard',
          },
        },
      ]);
    } finally {
      await database.end();
    }
  });

  it('lists the job as processing while it runs, then completed', async () => {
    const { key } = await platform.createKey();
    const pending = post(key, 'image', { prompt: 'a slow heron' });
    type Listed = { data: Array<{ id: string; kind: string; status: string; url?: string }> };
    let seen: Listed['data'][number] | undefined;
    for (let tries = 0; tries < 100 && !seen; tries++) {
      const listed = (await (await platform.fetch('/api/v1/media/jobs?kind=image', { key })).json()) as Listed;
      seen = listed.data.find((job) => job.status === 'processing');
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen).toMatchObject({ kind: 'image', status: 'processing' });
    const { json } = await pending;
    expect(json.job_id).toBe(seen!.id);
    const listed = (await (await platform.fetch('/api/v1/media/jobs?kind=image', { key })).json()) as Listed;
    expect(listed.data).toEqual([
      expect.objectContaining({
        id: seen!.id,
        status: 'completed',
        url: (json.images as Array<{ url: string }>)[0]!.url,
      }),
    ]);
  });

  it('takes hd on the hd-capable model (alias accepted) at 20 credits, landscape', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const { status, json } = await post(key, 'image', {
      prompt: 'a harbour',
      model: 'image_hd_capable',
      size: '1792x1024',
      quality: 'hd',
    });
    expect(status).toBe(200);
    expect(json).toMatchObject({ model: 'dall-e-3', credits_used: 20, engine: 'openai' });
    const png = await download((json.images as Array<{ url: string }>)[0]!.url);
    expect(await sharp(png).metadata()).toMatchObject({ width: 1792, height: 1024 });
    expect(await credits(user_id, key)).toBe(before - 20);
  });

  it('refuses hd on another model, naming quality, and charges nothing', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const { status, json } = await post(key, 'image', { prompt: 'x', model: 'flux-schnell', quality: 'hd' });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ type: 'invalid_request', param: 'quality' });
    expect((await post(key, 'image', { prompt: 'x', size: '512x512' })).json.error?.param).toBe('size');
    expect((await post(key, 'image', { prompt: 'x', model: 'sdxl' })).json.error?.param).toBe('model');
    expect(await credits(user_id, key)).toBe(before);
  });

  it('falls over to the other provider when the model’s own fails', async () => {
    const { key } = await platform.createKey();
    await platform.simulator.addFault({
      match: { protocol: 'replicate', model: 'black-forest-labs/flux-schnell' },
      fault: { status: 503 },
    });
    const { status, json } = await post(key, 'image', { prompt: 'a fox' });
    expect(status).toBe(200);
    expect(json).toMatchObject({ model: 'flux-schnell', engine: 'openai', credits_used: 5 });
  });
});

describe('POST /api/v1/media/remove-bg', () => {
  it('cuts the subject out with the hosted model: corners transparent, centre kept (8 credits)', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const { status, json } = await post(key, 'remove-bg', { image_base64: base64(disc) });
    expect(status).toBe(200);
    expect(json).toMatchObject({ credits_used: 8, engine: 'replicate' });
    const png = await download(json.url);
    expect((await pixel(png, 2, 2)).alpha).toBe(0);
    expect(await pixel(png, 100, 80)).toEqual({ red: 0xd0, alpha: 255 });
    expect(await credits(user_id, key)).toBe(before - 8);
  });

  it('falls back to the local engine, which removes a plain background for real (hd: 15 credits)', async () => {
    const { key } = await platform.createKey();
    await platform.simulator.addFault({ match: { protocol: 'replicate' }, fault: { status: 500 } });
    const { status, json } = await post(key, 'remove-bg', {
      image_base64: `data:image/png;base64,${base64(disc)}`,
      quality: 'hd',
    });
    expect(status).toBe(200);
    expect(json).toMatchObject({ credits_used: 15, engine: 'flood-fill' });
    const png = await download(json.url);
    expect(await sharp(png).metadata()).toMatchObject({ width: 200, height: 160, hasAlpha: true });
    for (const [x, y] of [
      [0, 0],
      [199, 159],
      [10, 80],
    ] as const) {
      expect((await pixel(png, x, y)).alpha).toBe(0);
    }
    expect(await pixel(png, 100, 80)).toEqual({ red: 0xd0, alpha: 255 });
    expect((await pixel(png, 100, 30)).alpha).toBe(255);
  });

  it('fetches image_url through the URL guard', async () => {
    const { key } = await platform.createKey();
    const { status, json } = await post(key, 'remove-bg', { image_url: `http://${imagesHost}/disc.png` });
    expect(status).toBe(200);
    expect((await pixel(await download(json.url), 0, 0)).alpha).toBe(0);
  });

  it('refuses unsafe URLs, wrong types, oversize and missing images, naming the field, and charges nothing', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const refusals: Array<[unknown, string, RegExp]> = [
      [{ image_url: 'http://127.0.0.1:9/a.png' }, 'image_url', /refused|not public|loopback/i],
      [{ image_url: 'http://169.254.169.254/latest/meta-data' }, 'image_url', /refused|not public|link-local/i],
      [{ image_url: 'http://[::1]/a.png' }, 'image_url', /refused|not public|loopback/i],
      [{ image_url: 'file:///etc/passwd' }, 'image_url', /http/i],
      [{ image_url: `http://${imagesHost}/to-private` }, 'image_url', /refused|not public|loopback/i],
      [{ image_url: `http://${imagesHost}/missing.png` }, 'image_url', /404/],
      [{ image_url: `http://${imagesHost}/text.txt` }, 'image_url', /not a PNG, JPEG, WebP or GIF/],
      [{ image_base64: base64(Buffer.from('plain text, not pixels')) }, 'image_base64', /not a PNG/],
      [{ image_base64: '%%% not base64 %%%' }, 'image_base64', /base64/],
      [{ image_base64: base64(Buffer.alloc(5.5 * 1024 * 1024, 1)) }, 'image_base64', /larger than 5 MiB/],
      [{}, 'image_url', /One of image_url or image_base64/],
      [{ image_base64: base64(disc), image_url: `http://${imagesHost}/disc.png` }, 'image_base64', /not both/],
      [{ image_base64: base64(disc), quality: 'ultra' }, 'quality', /standard or hd/],
    ];
    for (const [body, param, message] of refusals) {
      const { status, json } = await post(key, 'remove-bg', body);
      expect({ body: JSON.stringify(body).slice(0, 80), status, param: json.error?.param }).toEqual({
        body: JSON.stringify(body).slice(0, 80),
        status: 400,
        param,
      });
      expect(json.error?.message).toMatch(message);
    }
    expect(await credits(user_id, key)).toBe(before);
  });
});

describe('POST /api/v1/media/upscale', () => {
  it('doubles the size locally with fast (12 credits) and quadruples it on Replicate with quality (25)', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const fast = await post(key, 'upscale', { image_base64: base64(disc) });
    expect(fast.status).toBe(200);
    expect(fast.json).toMatchObject({
      original_size: '200x160',
      upscaled_size: '400x320',
      credits_used: 12,
      engine: 'sharp',
    });
    expect(await sharp(await download(fast.json.url)).metadata()).toMatchObject({ width: 400, height: 320 });
    const quality = await post(key, 'upscale', { image_base64: base64(disc), scale: 4, model: 'quality' });
    expect(quality.status).toBe(200);
    expect(quality.json).toMatchObject({ upscaled_size: '800x640', credits_used: 25, engine: 'replicate' });
    expect(await sharp(await download(quality.json.url)).metadata()).toMatchObject({ width: 800, height: 640 });
    expect(await credits(user_id, key)).toBe(before - 37);
    expect((await post(key, 'upscale', { image_base64: base64(disc), scale: 3 })).json.error?.param).toBe('scale');
  });
});

describe('POST /api/v1/media/ocr', () => {
  it('reads English and Japanese made here with the local engine (5 credits), words in json', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const english = await post(key, 'ocr', {
      image_base64: base64(await englishImage('Durable tessera engines 2026')),
      language: 'en',
      format: 'json',
    });
    expect(english.status).toBe(200);
    expect(english.json).toMatchObject({
      text: 'Durable tessera engines 2026',
      language: 'en',
      credits_used: 5,
      engine: 'tesseract',
    });
    expect(english.json.confidence).toBeGreaterThan(0.6);
    expect((english.json.words as Array<{ text: string }>).map((word) => word.text)).toEqual([
      'Durable',
      'tessera',
      'engines',
      '2026',
    ]);
    const japanese = await post(key, 'ocr', { image_base64: base64(await japaneseImage('十三日')) });
    expect(japanese.status).toBe(200);
    expect(japanese.json).toMatchObject({ text: '十三日', language: 'ja', credits_used: 5 });
    expect(japanese.json).not.toHaveProperty('words');
    expect(await credits(user_id, key)).toBe(before - 10);
  });

  it('reads with the premium vision engine (10 credits), or falls back to the standard one at its price', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const image = base64(await englishImage('Premium read'));
    const premium = await post(key, 'ocr', { image_base64: image, language: 'premium' });
    expect(premium.status).toBe(200);
    // The simulated vision model proves it saw the image; its log probabilities give the confidence.
    expect(premium.json).toMatchObject({ language: 'premium', credits_used: 10, engine: 'openai' });
    expect(premium.json.text).toMatch(/\[saw 1 image\(s\)\]/);
    expect(premium.json.confidence).toBeCloseTo(0.99, 2);
    await platform.simulator.addFault({ match: { protocol: 'openai' }, fault: { status: 500 } });
    const fallback = await post(key, 'ocr', { image_base64: image, language: 'premium' });
    expect(fallback.status).toBe(200);
    expect(fallback.json).toMatchObject({ engine: 'tesseract', credits_used: 5 });
    expect(fallback.json.text).toMatch(/Premium/);
    expect(await credits(user_id, key)).toBe(before - 15);
  });
});

describe('POST /api/v1/media/sfx', () => {
  it('makes a sound effect on ElevenLabs, priced by the documented rule', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const { status, json } = await post(key, 'sfx', { prompt: 'a door creaks open', duration: 4 });
    expect(status).toBe(200);
    expect(json).toMatchObject({ credits_used: 7, engine: 'elevenlabs' });
    expect(json.duration).toBeCloseTo(4, 0);
    const mp3 = await download(json.audio_url);
    expect(mp3.length).toBeGreaterThan(1000);
    expect(await credits(user_id, key)).toBe(before - 7);
    const tooLong = await post(key, 'sfx', { prompt: 'thunder', duration: 11 });
    expect(tooLong).toMatchObject({ status: 400, json: { error: { param: 'duration' } } });
  });
});

describe('POST /api/v1/media/stt', () => {
  it('transcribes an uploaded MP3 (4 credits per started minute) and refuses what is not audio', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const form = new FormData();
    form.set('audio', new Blob([simulatedMp3(3, 'Hello from the durable platform')]), 'hello.mp3');
    form.set('language', 'en');
    const response = await platform.fetch('/api/v1/media/stt', { method: 'POST', key, body: form });
    const json = (await response.json()) as Answer;
    expect({ status: response.status, error: json.error }).toEqual({ status: 200, error: undefined });
    expect(json).toMatchObject({ text: 'Hello from the durable platform', credits_used: 4, engine: 'openai' });
    expect(json.duration).toBeCloseTo(3, 0);
    expect(await credits(user_id, key)).toBe(before - 4);

    const text = new FormData();
    text.set('audio', new Blob(['just words']), 'notes.mp3');
    const refused = await platform.fetch('/api/v1/media/stt', { method: 'POST', key, body: text });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Answer).error).toMatchObject({ param: 'audio' });
    const json400 = await post(key, 'stt', { audio: 'x' });
    expect(json400).toMatchObject({ status: 400, json: { error: { param: 'audio' } } });
    expect(await credits(user_id, key)).toBe(before - 4);
  });
});

describe('Idempotency-Key', () => {
  it('gives the same job back, charged once, and refuses the key with another request', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await credits(user_id, key);
    const keyed = (path: string, body: unknown, idempotencyKey: string) =>
      platform
        .fetch(`/api/v1/media/${path}`, {
          method: 'POST',
          key,
          body: JSON.stringify(body),
          headers: { 'idempotency-key': idempotencyKey },
        })
        .then(async (response) => ({ status: response.status, json: (await response.json()) as Answer }));
    const [first, twin] = await Promise.all([
      keyed('image', { prompt: 'a kite' }, 'image-once'),
      keyed('image', { prompt: 'a kite' }, 'image-once'),
    ]);
    const again = await keyed('image', { prompt: 'a kite' }, 'image-once');
    expect([first.status, twin.status, again.status]).toEqual([200, 200, 200]);
    expect(twin.json).toEqual(first.json);
    expect(again.json).toEqual(first.json);
    const ocr = { image_base64: base64(await englishImage('Once only')), language: 'en' };
    const read = await keyed('ocr', ocr, 'ocr-once');
    expect(await keyed('ocr', ocr, 'ocr-once')).toEqual(read);
    expect(await credits(user_id, key)).toBe(before - 5 - 5);
    const conflict = await keyed('image', { prompt: 'a different kite' }, 'image-once');
    expect(conflict).toMatchObject({ status: 409, json: { error: { type: 'conflict', param: 'Idempotency-Key' } } });
    const bad = await keyed('image', { prompt: 'a kite' }, 'x'.repeat(300));
    expect(bad).toMatchObject({ status: 400, json: { error: { param: 'Idempotency-Key' } } });
    expect(await credits(user_id, key)).toBe(before - 10);
  });
});

describe('a kind without an engine', () => {
  it('answers 503 service_unavailable and charges nothing', async () => {
    const bare = await startTestPlatform({ MEDIA_DIR: mediaDir, ELEVENLABS_API_KEY: '' });
    try {
      const { key, user_id } = await bare.createKey();
      const before = await (await bare.fetch(`/api/v1/account/${user_id}`, { key })).json();
      const response = await bare.fetch('/api/v1/media/sfx', {
        method: 'POST',
        key,
        body: JSON.stringify({ prompt: 'rain' }),
      });
      expect(response.status).toBe(503);
      expect(((await response.json()) as Answer).error).toMatchObject({ type: 'service_unavailable' });
      expect(await (await bare.fetch(`/api/v1/account/${user_id}`, { key })).json()).toEqual(before);
    } finally {
      await bare.close();
    }
  });
});
