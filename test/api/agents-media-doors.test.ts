/**
 * The agent service's media doors and vision through HTTP: `POST /tts`, `/transcribe` and `/image/generate` charge
 * exactly what the gateway's `/api/v1/media/tts`, `/stt` and `/image` charge (the same handlers, engines, jobs and
 * ledger), with result files served by the agent service too; bad input is the
 * gateway's 400 charging nothing. `POST /vision/analyze`: a vision model sees the image (base64, or a URL fetched
 * through the URL guard), metered; a model without vision is refused before anything is called.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { simulatedMp3 } from '../../simulator/media-files.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let mediaDir: string;
let images: Server;
let imagesHost: string;
let png: Buffer;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

beforeAll(async () => {
  png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#3366cc' } })
    .png()
    .toBuffer();
  images = createServer((request, response) => {
    if (request.url === '/blue.png') response.writeHead(200, { 'content-type': 'image/png' }).end(png);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imagesHost = `127.0.0.1:${(images.address() as AddressInfo).port}`;
  mediaDir = await mkdtemp(join(tmpdir(), 'tessera-media-doors-'));
  platform = await startTestPlatform({ MEDIA_DIR: mediaDir, FETCH_ALLOWED_HOSTS: imagesHost });
});

afterAll(async () => {
  await platform?.close();
  await new Promise((resolve) => images?.close(resolve));
  await rm(mediaDir, { recursive: true, force: true });
});

async function credits(userId: string, key: string): Promise<number> {
  const response = await platform.fetch(`/api/v1/account/${userId}`, { key });
  return ((await response.json()) as { credits_remaining: number }).credits_remaining;
}

/** The price a call took from the account: the balance before less the balance after. */
async function charged(userId: string, key: string, call: () => Promise<Response>) {
  const before = await credits(userId, key);
  const response = await call();
  const body = response.headers.get('content-type')?.includes('json')
    ? ((await response.json()) as Json)
    : Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, body, spent: before - (await credits(userId, key)) };
}

const json = (body: unknown) => ({ method: 'POST', body: JSON.stringify(body) });

describe('media doors', () => {
  it('speaks like the gateway: the same MP3 engine, price and job', async () => {
    const { key, user_id } = await platform.createKey();
    const text = 'The agent service speaks through the gateway engines. '.repeat(5);
    const gateway = await charged(user_id, key, () => platform.fetch('/api/v1/media/tts', { ...json({ text }), key }));
    const door = await charged(user_id, key, () => platform.agents('/tts', { ...json({ text }), key }));
    expect(door.status).toBe(200);
    expect(door.headers.get('content-type')).toBe('audio/mpeg');
    expect(door.headers.get('x-media-engine')).toBe(gateway.headers.get('x-media-engine'));
    expect(door.headers.get('x-credits-used')).toBe(gateway.headers.get('x-credits-used'));
    expect(door.spent).toBe(gateway.spent);
    expect(door.spent).toBe(Number(door.headers.get('x-credits-used')));
    expect(door.spent).toBeGreaterThan(0);
    expect((door.body as Buffer).length).toBeGreaterThan(1000);
    const jobs = (await (await platform.fetch('/api/v1/media/jobs?kind=tts', { key })).json()) as Json;
    expect(jobs.data.map((job: Json) => job.id)).toContain(door.headers.get('x-media-job-id'));
  });

  it('draws like the gateway, and serves the file on the agent service', async () => {
    const { key, user_id } = await platform.createKey();
    const body = { prompt: 'a lighthouse at dawn', model: 'dall-e-3', quality: 'hd' };
    const gateway = await charged(user_id, key, () => platform.fetch('/api/v1/media/image', { ...json(body), key }));
    const door = await charged(user_id, key, () => platform.agents('/image/generate', { ...json(body), key }));
    expect(door.status).toBe(200);
    const { job_id: gatewayJob, images: gatewayImages, ...gatewayRest } = gateway.body as Json;
    const { job_id: doorJob, images: doorImages, ...doorRest } = door.body as Json;
    expect(doorRest).toEqual(gatewayRest);
    expect(doorRest).toMatchObject({ model: 'dall-e-3', credits_used: 20 });
    expect(door.spent).toBe(20);
    expect(gateway.spent).toBe(20);
    expect(doorJob).not.toBe(gatewayJob);
    expect(gatewayImages).toHaveLength(1);
    const file = await platform.agents(doorImages[0].url);
    expect(file.status).toBe(200);
    expect(await sharp(Buffer.from(await file.arrayBuffer())).metadata()).toMatchObject({ format: 'png' });
  });

  it('transcribes like the gateway', async () => {
    const { key, user_id } = await platform.createKey();
    const upload = () => {
      const form = new FormData();
      form.set('audio', new Blob([simulatedMp3(75, 'Hello from the agent service')]), 'hello.mp3');
      form.set('language', 'en');
      return form;
    };
    const gateway = await charged(user_id, key, () =>
      platform.fetch('/api/v1/media/stt', { method: 'POST', key, body: upload() }),
    );
    const door = await charged(user_id, key, () =>
      platform.agents('/transcribe', { method: 'POST', key, body: upload() }),
    );
    expect(door.status).toBe(200);
    const { job_id: _gatewayJob, ...gatewayRest } = gateway.body as Json;
    const { job_id: _doorJob, ...doorRest } = door.body as Json;
    expect(doorRest).toEqual(gatewayRest);
    expect(doorRest).toMatchObject({ text: 'Hello from the agent service', credits_used: 8 });
    expect([door.spent, gateway.spent]).toEqual([8, 8]);
  });

  it('answers the gateway’s errors, charging nothing, and needs a caller', async () => {
    const { key, user_id } = await platform.createKey();
    const refused = await charged(user_id, key, () =>
      platform.agents('/image/generate', { ...json({ prompt: 'x', quality: 'hd' }), key }),
    );
    expect(refused).toMatchObject({
      status: 400,
      spent: 0,
      body: { error: { type: 'invalid_request', param: 'quality' } },
    });
    const notAudio = new FormData();
    notAudio.set('audio', new Blob(['just words']), 'notes.mp3');
    const bad = await charged(user_id, key, () =>
      platform.agents('/transcribe', { method: 'POST', key, body: notAudio }),
    );
    expect(bad).toMatchObject({ status: 400, spent: 0, body: { error: { param: 'audio' } } });
    const anonymous = await platform.agents('/tts', json({ text: 'hello' }));
    expect(anonymous.status).toBe(401);
    const poor = await platform.createKey(undefined, 'free');
    const tooDear = await platform.agents('/image/generate', {
      ...json({ prompt: 'x', model: 'gpt-image-1' }),
      key: poor.key,
    });
    const gatewayTooDear = await platform.fetch('/api/v1/media/image', {
      ...json({ prompt: 'x', model: 'gpt-image-1' }),
      key: poor.key,
    });
    expect(tooDear.status).toBe(gatewayTooDear.status);
  });
});

describe('POST /vision/analyze', () => {
  it('describes an image with a vision model, metered, from base64 or a guarded URL', async () => {
    const { key, user_id } = await platform.createKey();
    const fromBase64 = await charged(user_id, key, () =>
      platform.agents('/vision/analyze', {
        ...json({ image: png.toString('base64'), prompt: 'What colour is it?' }),
        key,
      }),
    );
    expect(fromBase64.status).toBe(200);
    expect(fromBase64.body).toEqual({
      answer: expect.stringMatching(
        /^Simulated reply from gpt-4o-[\d-]+ to: What colour is it\? \[saw 1 image\(s\)\]$/,
      ),
      model: expect.stringMatching(/^gpt-4o/),
      usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
      credits_used: fromBase64.spent,
    });
    expect(fromBase64.spent).toBeGreaterThan(0);
    const fromUrl = await platform.agents('/vision/analyze', {
      ...json({ image: `http://${imagesHost}/blue.png`, model: 'claude-haiku-4-5' }),
      key,
    });
    expect(fromUrl.status).toBe(200);
    expect(((await fromUrl.json()) as Json).answer).toContain('Describe this image in detail. [saw 1 image(s)]');
  });

  it('never uses a model without vision, and refuses unsafe or broken images, charging nothing', async () => {
    const { key, user_id } = await platform.createKey();
    await platform.simulator.resetRequests();
    const refused = await charged(user_id, key, () =>
      platform.agents('/vision/analyze', { ...json({ image: png.toString('base64'), model: 'deepseek-chat' }), key }),
    );
    expect(refused).toMatchObject({
      status: 400,
      spent: 0,
      body: { error: { type: 'invalid_request', param: 'model' } },
    });
    expect((refused.body as Json).error.message).toContain('vision');
    expect((await platform.simulator.requests()).total).toBe(0);
    const auto = await platform.agents('/vision/analyze', {
      ...json({ image: png.toString('base64'), model: 'auto' }),
      key,
    });
    expect(auto.status).toBe(200);
    const served = ((await auto.json()) as Json).model as string;
    expect(served).not.toMatch(/deepseek|llama|qwen/);
    for (const image of ['http://127.0.0.2:9/secret.png', 'bm90IGFuIGltYWdl', `http://${imagesHost}/missing.png`]) {
      const bad = await charged(user_id, key, () => platform.agents('/vision/analyze', { ...json({ image }), key }));
      expect(bad).toMatchObject({ status: 400, spent: 0, body: { error: { param: 'image' } } });
    }
  });
});
