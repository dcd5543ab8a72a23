/**
 * Replicate predictions as asynchronous engines (`replicate`): music and video. `create` starts a prediction
 * (`POST /v1/models/{owner}/{name}/predictions`, or `POST /v1/predictions` with `version` when the configured model
 * pins one as `owner/name:version`), `poll` reads it (`GET /v1/predictions/{id}`), `cancel` cancels it;
 * `findCreated` looks through the account's predictions (`GET /v1/predictions`, newest first, 100 a page) for those
 * of the same model and input made since a moment, so a retried create can adopt the prediction an earlier attempt
 * started but never recorded. A running
 * prediction reports its progress through tqdm-style percentages in `logs`, read here as `progress`. Succeeded
 * outputs are URLs (one string or a list), returned with the content type their extension names; download them
 * with `downloadOutput` (./http.ts) — Replicate keeps them for an hour. This adapter does not retry a failed poll:
 * the caller polls again (the workflow's activity retries), and a prediction outlives any number of failed polls.
 *
 * Settings: `REPLICATE_API_TOKEN`, `REPLICATE_BASE_URL` (default https://api.replicate.com), `REPLICATE_MUSIC_MODEL`
 * (default `meta/musicgen`: input prompt, duration, output_format mp3) and `REPLICATE_VIDEO_MODEL` (default
 * `kwaivgi/kling-v1.6-standard`: input prompt, duration 5 or 10, aspect_ratio). A video request in `pro` mode uses
 * the `-pro` sibling of a `-standard` model.
 */
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import { z } from 'zod';
import {
  EngineError,
  type BackgroundRemovalEngine,
  type EngineOptions,
  type ImageEngine,
  type ImageRequest,
  type MediaFile,
  type MusicEngine,
  type MusicRequest,
  type UpscaleEngine,
  type VideoEngine,
  type VideoRequest,
} from '../engine.ts';
import { downloadOutput, exchange, joinUrl, mediaUpstream, readJson, type MediaHttpConfig } from './http.ts';

export const defaultReplicateMusicModel = 'meta/musicgen';
export const defaultReplicateVideoModel = 'kwaivgi/kling-v1.6-standard';

export interface ReplicateConfig extends MediaHttpConfig {
  /** `https://api.replicate.com`, without `/v1`. */
  baseUrl: string;
  apiToken: string;
  /** `owner/name` or `owner/name:version`. */
  model: string;
}

const predictionSchema = z.object({
  id: z.string().min(1),
  status: z.enum(['starting', 'processing', 'succeeded', 'failed', 'canceled']),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  logs: z.string().nullable().optional(),
});

type Prediction = z.infer<typeof predictionSchema>;

const listSchema = z.object({
  next: z.string().nullable().optional(),
  results: z.array(
    z.object({
      id: z.string().min(1),
      model: z.string().optional(),
      created_at: z.string(),
      input: z.record(z.string(), z.unknown()).nullable().optional(),
    }),
  ),
});

/** A JSON value with its object keys sorted, so two inputs compare equal whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const contentTypes: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mov: 'video/quicktime',
  gif: 'image/gif',
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

/** The music engine: `meta/musicgen`'s input by default. */
export function createReplicateMusicEngine(config: ReplicateConfig): MusicEngine {
  return createPredictionEngine<MusicRequest>(config, (request) => ({
    model: config.model,
    input: { prompt: request.prompt, duration: Math.max(1, Math.round(request.durationSeconds)), output_format: 'mp3' },
  }));
}

/** The video engine: Kling's input by default (5 or 10 second clips). */
export function createReplicateVideoEngine(config: ReplicateConfig): VideoEngine {
  return createPredictionEngine<VideoRequest>(config, (request) => ({
    model: request.mode === 'pro' ? config.model.replace(/-standard(?=$|:)/, '-pro') : config.model,
    input: { prompt: request.prompt, duration: request.durationSeconds > 5 ? 10 : 5, aspect_ratio: '16:9' },
  }));
}

function createPredictionEngine<Request>(
  config: Omit<ReplicateConfig, 'model'>,
  toPrediction: (request: Request) => { model: string; input: Record<string, unknown> },
) {
  const id = 'replicate';
  const upstream = mediaUpstream(id, { timeoutMs: 30_000, ...config });
  const headers = { authorization: `Bearer ${config.apiToken}` };
  const call = (
    method: 'GET' | 'POST',
    path: string,
    options?: EngineOptions,
    body?: Record<string, unknown>,
    extraHeaders: Record<string, string> = {},
  ) =>
    exchange(
      { ...upstream, timeoutMs: upstream.timeoutMs + (extraHeaders.prefer ? syncWaitSeconds * 1000 : 0) },
      {
        method,
        url: joinUrl(config.baseUrl, path),
        headers: { ...headers, ...extraHeaders },
        ...(body === undefined ? {} : { body }),
      },
      (response) => readJson(id, response, predictionSchema),
      options?.signal,
    );

  const start = async (request: Request, options?: EngineOptions, wait = false) => {
    const { model, input } = toPrediction(request);
    const [name, version] = model.split(':');
    const prefer: Record<string, string> = wait ? { prefer: `wait=${syncWaitSeconds}` } : {};
    return version === undefined
      ? await call('POST', `v1/models/${name}/predictions`, options, { input }, prefer)
      : await call('POST', 'v1/predictions', options, { version: model, input }, prefer);
  };

  return {
    id,
    upstream,

    async create(request: Request, options?: EngineOptions) {
      return { providerJobId: (await start(request, options)).id };
    },

    async poll(providerJobId: string, options?: EngineOptions) {
      return outcome(await call('GET', `v1/predictions/${encodeURIComponent(providerJobId)}`, options));
    },

    async cancel(providerJobId: string, options?: EngineOptions) {
      await call('POST', `v1/predictions/${encodeURIComponent(providerJobId)}/cancel`, options);
    },

    /**
     * A prediction run to its end within one call (images take seconds): created with `Prefer: wait`, which answers
     * when it ends or after `syncWaitSeconds`, then polled each second until `syncDeadlineMs`. A prediction still
     * running then is cancelled and the call fails as retryable (the next engine may serve).
     */
    async runToEnd(request: Request, options?: EngineOptions) {
      const started = Date.now();
      const prediction = await start(request, options, true);
      let result = outcome(prediction);
      while (result.status === 'running') {
        if (Date.now() - started > syncDeadlineMs) {
          await this.cancel(prediction.id).catch(() => undefined);
          throw new EngineError(id, `prediction ${prediction.id} did not end within ${syncDeadlineMs / 1000} s`, {
            retryable: true,
          });
        }
        await delay(1000, undefined, options?.signal ? { signal: options.signal } : {});
        result = await this.poll(prediction.id, options);
      }
      if (result.status === 'failed') throw new EngineError(id, result.error, { retryable: true });
      return result.outputs;
    },

    async findCreated(request: Request, since: Date, options?: EngineOptions) {
      const { model, input } = toPrediction(request);
      const [name] = model.split(':');
      const wanted = canonical(input);
      const origin = new URL(config.baseUrl).origin;
      const found: string[] = [];
      // Newest first: pages are read until a prediction older than `since`. A `next` elsewhere than the provider
      // is not followed (the token would go with it).
      for (let url: string | undefined = joinUrl(config.baseUrl, 'v1/predictions'); url !== undefined;) {
        const page: z.infer<typeof listSchema> = await exchange(
          upstream,
          { method: 'GET', url, headers },
          (response) => readJson(id, response, listSchema),
          options?.signal,
        );
        for (const prediction of page.results) {
          if (Date.parse(prediction.created_at) < since.getTime()) return found.reverse();
          if (prediction.model === name && prediction.input && canonical(prediction.input) === wanted) {
            found.push(prediction.id);
          }
        }
        url = page.next && new URL(page.next).origin === origin ? page.next : undefined;
      }
      return found.reverse();
    },
  };
}

/** How long `Prefer: wait` holds a synchronous prediction's creation, and how long one may run in all. */
const syncWaitSeconds = 60;
const syncDeadlineMs = 100_000;

export interface ReplicateImageConfig extends Omit<ReplicateConfig, 'model'> {
  /** `owner/name:version` of a background remover taking `image` (REPLICATE_REMOVE_BG_MODEL). */
  removeBackgroundModel: string;
  /** `owner/name:version` of an upscaler taking `image` and `scale` (REPLICATE_UPSCALE_MODEL). */
  upscaleModel: string;
}

export type ReplicateImageEngine = ImageEngine & BackgroundRemovalEngine & UpscaleEngine;

/** Flux's aspect ratios for the API's three sizes. */
const aspectRatios: Record<string, string> = { '1024x1024': '1:1', '1792x1024': '16:9', '1024x1792': '9:16' };

/**
 * Replicate's image models, synchronous (`runToEnd`): generation (`generate`, the request's `model` is the Replicate
 * model such as `black-forest-labs/flux-schnell`; input prompt, aspect_ratio, output_format png; Flux Ultra's `raw`
 * for photographic output), background removal and upscaling (input image as a data URI, which Replicate accepts for
 * files up to a few megabytes). Outputs are downloaded at once: Replicate keeps them for an hour only.
 */
export function createReplicateImageEngine(config: ReplicateImageConfig): ReplicateImageEngine {
  type Prediction = { model: string; input: Record<string, unknown> };
  const engine = createPredictionEngine<Prediction>(config, (prediction) => prediction);
  const firstImage = async (outputs: Array<{ url: string }>, signal?: AbortSignal) =>
    downloadOutput(engine.upstream, outputs[0]!.url, 'image/', signal);
  const dataUri = (image: MediaFile) =>
    `data:${image.contentType};base64,${Buffer.from(image.bytes).toString('base64')}`;

  return {
    id: engine.id,

    async generate(request: ImageRequest, options?: EngineOptions) {
      const input = {
        prompt: request.prompt,
        aspect_ratio: aspectRatios[request.size] ?? '1:1',
        output_format: 'png',
        ...(request.model.includes('ultra') ? { raw: true } : {}),
      };
      const outputs = await engine.runToEnd({ model: request.model, input }, options);
      return Promise.all(
        outputs.map((output) => downloadOutput(engine.upstream, output.url, 'image/', options?.signal)),
      );
    },

    async removeBackground(image: MediaFile, _request: { quality: 'standard' | 'hd' }, options?: EngineOptions) {
      const input = { image: dataUri(image), format: 'png' };
      return firstImage(
        await engine.runToEnd({ model: config.removeBackgroundModel, input }, options),
        options?.signal,
      );
    },

    async upscale(image: MediaFile, request: { scale: 2 | 4; model: 'fast' | 'quality' }, options?: EngineOptions) {
      const input = { image: dataUri(image), scale: request.scale, face_enhance: false };
      const outputs = await engine.runToEnd({ model: config.upscaleModel, input }, options);
      const file = await firstImage(outputs, options?.signal);
      return { ...file, originalSize: await sizeOf(image), upscaledSize: await sizeOf(file) };
    },
  };
}

async function sizeOf(image: MediaFile): Promise<string> {
  const { width, height } = await sharp(image.bytes).metadata();
  return `${width}x${height}`;
}

function outcome(prediction: Prediction) {
  if (prediction.status === 'starting' || prediction.status === 'processing') {
    const progress = progressOf(prediction.logs ?? '');
    return { status: 'running' as const, ...(progress === undefined ? {} : { progress }) };
  }
  if (prediction.status === 'succeeded') {
    const urls = (Array.isArray(prediction.output) ? prediction.output : [prediction.output]).filter(
      (value): value is string => typeof value === 'string' && /^https?:\/\//.test(value),
    );
    if (urls.length === 0)
      return { status: 'failed' as const, error: 'the prediction succeeded without an output URL' };
    return { status: 'succeeded' as const, outputs: urls.map((url) => ({ url, ...contentTypeOf(url) })) };
  }
  if (prediction.status === 'canceled') return { status: 'failed' as const, error: 'the prediction was canceled' };
  const error = typeof prediction.error === 'string' && prediction.error !== '' ? prediction.error : 'unknown error';
  return { status: 'failed' as const, error };
}

/** The last tqdm percentage in the logs, as 0..1. */
function progressOf(logs: string): number | undefined {
  const matches = [...logs.matchAll(/(\d{1,3})%\|/g)];
  const last = matches.at(-1)?.[1];
  return last === undefined ? undefined : Math.min(100, Number(last)) / 100;
}

function contentTypeOf(url: string): { contentType?: string } {
  const extension = /\.([a-z0-9]+)(?:$|\?)/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
  const contentType = extension === undefined ? undefined : contentTypes[extension];
  return contentType === undefined ? {} : { contentType };
}
