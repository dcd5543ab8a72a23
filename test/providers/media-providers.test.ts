/**
 * The hosted media engines against the provider simulator: real files by their magic numbers, wire shapes through
 * the simulator's request log, Replicate predictions through their states, and fallback between engines.
 */
import { describe, expect, it } from '@jest/globals';
import { fileTypeFromBuffer } from 'file-type';
import { EngineError, type SpeechEngine } from '../../activities/media/engine.ts';
import { breakerKey, withFallback, type EngineBreaker } from '../../activities/media/fallback.ts';
import { createElevenLabsEngine } from '../../activities/media/providers/elevenlabs.ts';
import { downloadOutput, mediaUpstream } from '../../activities/media/providers/http.ts';
import { createOpenAIMediaEngine } from '../../activities/media/providers/openai-media.ts';
import {
  createReplicateMusicEngine,
  createReplicateVideoEngine,
  defaultReplicateMusicModel,
  defaultReplicateVideoModel,
} from '../../activities/media/providers/replicate.ts';
import { createHostedMediaEngines } from '../../activities/media/providers/index.ts';
import type { BreakerView } from '../../activities/routing/circuit-breaker.ts';
import { readSettings } from '../../config/settings.ts';
import { simulatedMediaProviders, simulatedProviders } from '../../scripts/lib/simulated-providers.ts';
import { simulatedMp3, simulatedMp3Seconds } from '../../simulator/media-files.ts';
import { mp3DurationSeconds } from '../../activities/media/mp3-duration.ts';
import { useProviderHarness } from './provider-harness.ts';

const harness = useProviderHarness({ beforeEach: ['faults', 'requests'] });

const openAI = () => createOpenAIMediaEngine({ baseUrl: `${harness.simulator.url}/v1`, apiKey: 'sk-sim' });
const elevenLabs = () => createElevenLabsEngine({ baseUrl: harness.simulator.url, apiKey: 'xi-sim' });
const music = () =>
  createReplicateMusicEngine({ baseUrl: harness.simulator.url, apiToken: 'r8_sim', model: defaultReplicateMusicModel });
const video = () =>
  createReplicateVideoEngine({ baseUrl: harness.simulator.url, apiToken: 'r8_sim', model: defaultReplicateVideoModel });

async function kindOf(bytes: Uint8Array): Promise<string | undefined> {
  return (await fileTypeFromBuffer(bytes))?.mime;
}

async function lastRequest() {
  const { last } = await harness.control.requests();
  if (last === null) throw new Error('no request was logged');
  return last;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('OpenAI media engine', () => {
  it('speaks MP3 through POST /v1/audio/speech', async () => {
    const audio = await openAI().speak({ text: 'Hello from Tessera', voice: 'alloy', speed: 1.25 });
    expect(audio.contentType).toBe('audio/mpeg');
    // Three words at 2.5 words a second, sped up 1.25 times: about 0.96 s of MPEG frames.
    expect(audio.durationSeconds).toBeCloseTo(simulatedMp3Seconds(3 / 2.5 / 1.25), 3);
    expect(await kindOf(audio.bytes)).toBe('audio/mpeg');
    const request = await lastRequest();
    expect(request).toMatchObject({ protocol: 'openai-media', model: 'tts-1', path: '/v1/audio/speech' });
    expect(request.headers.authorization).toBe('Bearer sk-sim');
    expect(request.body).toEqual({
      model: 'tts-1',
      input: 'Hello from Tessera',
      voice: 'alloy',
      response_format: 'mp3',
      speed: 1.25,
    });
  });

  it('generates PNG images with b64_json for DALL·E and without response_format for GPT Image', async () => {
    const [image] = await openAI().generate({
      prompt: 'a red fox',
      model: 'dall-e-3',
      size: '1792x1024',
      quality: 'hd',
    });
    expect(await kindOf(image!.bytes)).toBe('image/png');
    expect(Buffer.from(image!.bytes).readUInt32BE(16)).toBe(1792);
    expect((await lastRequest()).body).toEqual({
      model: 'dall-e-3',
      prompt: 'a red fox',
      n: 1,
      size: '1792x1024',
      quality: 'hd',
      response_format: 'b64_json',
    });

    const [other] = await openAI().generate({
      prompt: 'a fox',
      model: 'gpt-image-1',
      size: '1024x1024',
      quality: 'hd',
    });
    expect(await kindOf(other!.bytes)).toBe('image/png');
    expect((await lastRequest()).body).toEqual({
      model: 'gpt-image-1',
      prompt: 'a fox',
      n: 1,
      size: '1024x1024',
      quality: 'high',
    });
  });

  it('transcribes multipart uploads, giving back the text of simulated speech', async () => {
    const engine = openAI();
    const speech = await engine.speak({ text: 'the quick brown fox', voice: 'nova', speed: 1 });
    const transcript = await engine.transcribe(speech, { language: 'en' });
    expect(transcript).toMatchObject({ text: 'the quick brown fox', language: 'en' });
    expect(transcript.durationSeconds).toBeGreaterThan(0);
    const request = await lastRequest();
    expect(request.path).toBe('/v1/audio/transcriptions');
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.body).toMatchObject({
      model: 'whisper-1',
      response_format: 'verbose_json',
      language: 'en',
      file: { filename: 'audio.mp3', type: 'audio/mpeg', size: speech.bytes.length },
    });

    const other = await engine.transcribe({ bytes: new Uint8Array([1, 2, 3]), contentType: 'audio/wav' }, {});
    expect(other.text).toMatch(/^Simulated transcript of 3 bytes/);
  });

  it('maps a refused input to a non-retryable EngineError with the provider message', async () => {
    const failure = await openAI()
      .generate({ prompt: 'x', model: 'dall-e-3', size: '640x480', quality: 'standard' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect(failure).toMatchObject({ engine: 'openai', retryable: false, status: 400 });
    expect((failure as Error).message).toMatch(/Invalid size '640x480'/);
  });
});

describe('ElevenLabs engine', () => {
  it('speaks MP3 through POST /v1/text-to-speech/{voice_id} with xi-api-key', async () => {
    const audio = await elevenLabs().speak({ text: 'こんにちは', voice: '21m00Tcm4TlvDq8ikWAM', speed: 2 });
    expect(await kindOf(audio.bytes)).toBe('audio/mpeg');
    expect(audio.durationSeconds).toBeGreaterThan(0);
    const request = await lastRequest();
    expect(request).toMatchObject({
      protocol: 'elevenlabs',
      model: 'eleven_multilingual_v2',
      path: '/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM?output_format=mp3_44100_128',
    });
    expect(request.headers['xi-api-key']).toBe('xi-sim');
    expect(request.body).toEqual({
      text: 'こんにちは',
      model_id: 'eleven_multilingual_v2',
      voice_settings: { speed: 1.2 },
    });
  });

  it('makes sound effects through POST /v1/sound-generation', async () => {
    const effect = await elevenLabs().soundEffect({ prompt: 'a door creaks', durationSeconds: 45 });
    expect(await kindOf(effect.bytes)).toBe('audio/mpeg');
    expect(effect.durationSeconds).toBe(30);
    expect((await lastRequest()).body).toEqual({
      text: 'a door creaks',
      model_id: 'eleven_text_to_sound_v2',
      duration_seconds: 30,
      prompt_influence: 0.3,
    });
  });
});

describe('Replicate engines', () => {
  it('runs a video prediction through starting, processing and succeeded, and serves an MP4', async () => {
    const engine = video();
    const { providerJobId } = await engine.create({
      // Run by polls, not the clock: starting at the first, processing at the next two, done at the fourth, however
      // slow the machine (a run of 2 s, `starting` for 400 ms, was once polled first after that on CI).
      prompt: 'waves at dusk [[polls 4]]',
      durationSeconds: 8,
      mode: 'pro',
    });
    const created = await lastRequest();
    expect(created).toMatchObject({
      protocol: 'replicate',
      model: 'kwaivgi/kling-v1.6-pro',
      path: '/v1/models/kwaivgi/kling-v1.6-pro/predictions',
    });
    expect(created.headers.authorization).toBe('Bearer r8_sim');
    expect(created.body).toEqual({
      input: { prompt: 'waves at dusk [[polls 4]]', duration: 10, aspect_ratio: '16:9' },
    });

    const seen: string[] = [];
    let outcome = await engine.poll(providerJobId);
    while (outcome.status === 'running' && seen.length < 10) {
      seen.push(outcome.progress === undefined ? 'starting' : `processing ${outcome.progress}`);
      outcome = await engine.poll(providerJobId);
    }
    expect(seen).toEqual(['starting', 'processing 0.33', 'processing 0.66']);
    expect(outcome.status).toBe('succeeded');
    if (outcome.status !== 'succeeded') return;
    const [output] = outcome.outputs as Array<{ url: string; contentType?: string }>;
    expect(output).toMatchObject({ contentType: 'video/mp4' });
    const file = await downloadOutput(mediaUpstream('replicate', {}), output!.url, 'video/');
    expect(await kindOf(file.bytes)).toBe('video/mp4');
    expect((await lastRequest()).path).toBe(`/v1/predictions/${providerJobId}`);
  });

  it('reports a failed prediction with its error', async () => {
    const engine = music();
    const { providerJobId } = await engine.create({
      prompt: 'jazz [[fail]] [[polls 1]]',
      type: 'music',
      durationSeconds: 12,
    });
    expect((await lastRequest()).body).toEqual({
      input: { prompt: 'jazz [[fail]] [[polls 1]]', duration: 12, output_format: 'mp3' },
    });
    const outcome = await engine.poll(providerJobId);
    expect(outcome).toEqual({ status: 'failed', error: expect.stringMatching(/Simulated failure/) });
  });

  it('survives poll errors by polling again, and the music output is an MP3', async () => {
    const engine = music();
    const { providerJobId } = await engine.create({
      prompt: 'calm piano [[poll-error 2]] [[takes 0ms]]',
      type: 'music',
      durationSeconds: 3,
    });
    for (let attempt = 0; attempt < 2; attempt++) {
      const failure = await engine.poll(providerJobId).catch((error: unknown) => error);
      expect(failure).toMatchObject({ engine: 'replicate', retryable: true, status: 500 });
    }
    const outcome = await engine.poll(providerJobId);
    expect(outcome.status).toBe('succeeded');
    if (outcome.status !== 'succeeded') return;
    const [output] = outcome.outputs as Array<{ url: string; contentType?: string }>;
    expect(output!.contentType).toBe('audio/mpeg');
    const file = await downloadOutput(mediaUpstream('replicate', {}), output!.url, 'audio/');
    expect(await kindOf(file.bytes)).toBe('audio/mpeg');
  });

  it('cancels a running prediction', async () => {
    const engine = video();
    const { providerJobId } = await engine.create({
      prompt: 'slow clouds [[takes 30s]]',
      durationSeconds: 5,
      mode: 'standard',
    });
    expect((await lastRequest()).model).toBe('kwaivgi/kling-v1.6-standard');
    expect((await engine.poll(providerJobId)).status).toBe('running');
    await engine.cancel(providerJobId);
    expect((await lastRequest()).path).toBe(`/v1/predictions/${providerJobId}/cancel`);
    expect(await engine.poll(providerJobId)).toEqual({ status: 'failed', error: 'the prediction was canceled' });
  });

  it('pins a version with POST /v1/predictions', async () => {
    const engine = createReplicateMusicEngine({
      baseUrl: harness.simulator.url,
      apiToken: 'r8_sim',
      model: 'meta/musicgen:671ac645ce5e552cc63a54a2bbff63fcf798043055d2dac5fc9e36a837eedcfb',
    });
    await engine.create({ prompt: 'drums', type: 'music', durationSeconds: 2 });
    const request = await lastRequest();
    expect(request).toMatchObject({ path: '/v1/predictions', model: 'meta/musicgen' });
    expect(request.body).toMatchObject({
      version: 'meta/musicgen:671ac645ce5e552cc63a54a2bbff63fcf798043055d2dac5fc9e36a837eedcfb',
    });
  });
});

describe('simulated Replicate prediction list', () => {
  it('lists every prediction newest first, with its times, 100 a page', async () => {
    // Music, whose simulated output is made at once: a video's is encoded by ffmpeg at its creation, and 102 of them
    // ran past the test's minute on a busy machine.
    const engine = music();
    const made: string[] = [];
    for (let index = 0; index < 102; index++) {
      made.push(
        (await engine.create({ prompt: `list ${index} [[takes 0ms]]`, type: 'music', durationSeconds: 5 }))
          .providerJobId,
      );
    }
    type Page = {
      next: string | null;
      previous: string | null;
      results: Array<{ id: string; status: string; created_at: string; completed_at?: string }>;
    };
    const read = async (url: string) => {
      const response = await fetch(url, { headers: { authorization: 'Bearer r8_sim' } });
      expect(response.status).toBe(200);
      return (await response.json()) as Page;
    };
    await sleep(10);
    const first = await read(`${harness.simulator.url}/v1/predictions`);
    expect(first.results).toHaveLength(100);
    expect(first.previous).toBeNull();
    expect(first.results[0]).toMatchObject({ id: made.at(-1), status: 'succeeded' });
    const { created_at: createdAt, completed_at: completedAt } = first.results[0]!;
    expect(Date.parse(completedAt!)).toBeGreaterThanOrEqual(Date.parse(createdAt));
    const ids = [...first.results.map((result) => result.id)];
    for (let next = first.next; next !== null;) {
      const page = await read(next);
      ids.push(...page.results.map((result) => result.id));
      next = page.next;
    }
    // Other tests' predictions come after this test's, oldest last.
    expect(ids.slice(0, 102)).toEqual([...made].reverse());
    expect((await lastRequest()).path).toMatch(/^\/v1\/predictions\?cursor=/);
  });
});

/** The shared breaker's behaviour in memory: opens after `threshold` consecutive failures. */
class MemoryBreaker implements EngineBreaker {
  readonly states = new Map<string, BreakerView>();
  private readonly threshold: number;
  constructor(threshold = 5) {
    this.threshold = threshold;
  }
  async views() {
    return new Map(this.states);
  }
  admission(view: BreakerView | undefined) {
    return view?.state === 'open' ? ('open' as const) : ('closed' as const);
  }
  async claimProbe() {
    return false;
  }
  async recordSuccess(provider: string) {
    this.states.delete(provider);
  }
  async recordFailure(provider: string, error: string) {
    const failures = (this.states.get(provider)?.consecutiveFailures ?? 0) + 1;
    const state = failures >= this.threshold ? 'open' : 'closed';
    this.states.set(provider, {
      provider,
      state,
      consecutiveFailures: failures,
      openedAt: state === 'open' ? new Date() : null,
      probeStartedAt: null,
      lastError: error,
    });
    return state;
  }
}

describe('mp3DurationSeconds', () => {
  it('adds up the frames after an ID3 tag, and finds none in other bytes', () => {
    expect(mp3DurationSeconds(simulatedMp3(2, 'tagged'))).toBeCloseTo(simulatedMp3Seconds(2), 6);
    expect(mp3DurationSeconds(simulatedMp3(0.3))).toBeCloseTo(simulatedMp3Seconds(0.3), 6);
    expect(mp3DurationSeconds(new Uint8Array([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]))).toBeUndefined();
    expect(mp3DurationSeconds(new TextEncoder().encode('not audio'))).toBeUndefined();
  });
});

describe('withFallback', () => {
  const speakers = (): SpeechEngine[] => [openAI(), elevenLabs()];
  const hello = (engine: SpeechEngine) =>
    engine.speak({ text: 'hello', voice: engine.id === 'openai' ? 'alloy' : 'pNInz6obpgDQGcFmaJgB', speed: 1 });

  it('serves from the first engine and names it', async () => {
    const served = await withFallback(speakers(), hello, new MemoryBreaker());
    expect(served.engine).toBe('openai');
    expect(await kindOf(served.result.bytes)).toBe('audio/mpeg');
  });

  it.each([429, 500])('falls over to the next engine on a %i and names it', async (status) => {
    await harness.control.addFault({ match: { protocol: 'openai-media' }, fault: { status } });
    const breaker = new MemoryBreaker();
    const served = await withFallback(speakers(), hello, breaker);
    expect(served.engine).toBe('elevenlabs');
    expect(await kindOf(served.result.bytes)).toBe('audio/mpeg');
    expect(breaker.states.get(breakerKey('openai'))).toMatchObject({ consecutiveFailures: 1 });
    expect((await harness.control.requests()).by_model).toEqual({ 'tts-1': 1, eleven_multilingual_v2: 1 });
  });

  it('does not fall over on a 400', async () => {
    await harness.control.addFault({ match: { protocol: 'openai-media', model: 'tts-1' }, fault: { status: 400 } });
    const breaker = new MemoryBreaker();
    const failure = await withFallback(speakers(), hello, breaker).catch((error: unknown) => error);
    expect(failure).toMatchObject({ engine: 'openai', retryable: false, status: 400 });
    expect(breaker.states.size).toBe(0);
    expect((await harness.control.requests()).total).toBe(1);
  });

  it('skips an engine whose breaker is open, and fails retryably when every engine fails', async () => {
    const breaker = new MemoryBreaker(1);
    await breaker.recordFailure(breakerKey('openai'), 'down');
    const served = await withFallback(speakers(), hello, breaker);
    expect(served.engine).toBe('elevenlabs');
    expect((await harness.control.requests()).by_model).toEqual({ eleven_multilingual_v2: 1 });

    await harness.control.addFault({ match: { protocol: 'elevenlabs' }, fault: { status: 503 } });
    const failure = await withFallback(speakers(), hello, breaker).catch((error: unknown) => error);
    expect(failure).toMatchObject({ engine: 'media', retryable: true, status: 503 });
  });
});

describe('hosted media engines from settings', () => {
  it('configures each provider with a key, in fallback order, pointed at the simulator by npm start', async () => {
    const environment = {
      DATABASE_URL: 'postgres://unused',
      ...simulatedProviders(harness.simulator.url),
      ...simulatedMediaProviders(harness.simulator.url, {}),
    };
    const engines = createHostedMediaEngines(readSettings(environment), environment);
    expect(engines.speech.map((engine) => engine.id)).toEqual(['openai', 'elevenlabs']);
    expect(engines.images.map((engine) => engine.id)).toEqual(['openai', 'replicate']);
    expect(engines.backgroundRemoval.map((engine) => engine.id)).toEqual(['replicate']);
    expect(engines.upscale.map((engine) => engine.id)).toEqual(['replicate']);
    expect(engines.ocr.map((engine) => engine.id)).toEqual(['openai']);
    expect(engines.transcription.map((engine) => engine.id)).toEqual(['openai']);
    expect(engines.soundEffects.map((engine) => engine.id)).toEqual(['elevenlabs']);
    expect(engines.music.map((engine) => engine.id)).toEqual(['replicate']);
    expect(engines.video.map((engine) => engine.id)).toEqual(['replicate']);

    await engines.music[0]!.create({ prompt: 'a lullaby', type: 'music', durationSeconds: 4 });
    expect(await lastRequest()).toMatchObject({ model: 'meta/musicgen', path: '/v1/models/meta/musicgen/predictions' });
  });

  it('leaves out providers without keys, and keeps configured ones off the simulator', () => {
    const none = createHostedMediaEngines(readSettings({ DATABASE_URL: 'postgres://unused' }), {});
    expect(Object.values(none).flat()).toEqual([]);
    expect(simulatedMediaProviders(harness.simulator.url, { ELEVENLABS_API_KEY: 'real' })).toEqual({
      REPLICATE_API_TOKEN: 'simulator',
      REPLICATE_BASE_URL: harness.simulator.url,
    });
    expect(() => readSettings({ DATABASE_URL: 'postgres://unused', REPLICATE_VIDEO_MODEL: 'kling' })).toThrow(
      /REPLICATE_VIDEO_MODEL/,
    );
  });
});
