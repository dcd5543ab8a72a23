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
import { z } from 'zod';
import type { EngineOptions, MusicEngine, MusicRequest, VideoEngine, VideoRequest } from '../engine.ts';
import { exchange, joinUrl, mediaUpstream, readJson, type MediaHttpConfig } from './http.ts';

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
  config: ReplicateConfig,
  toPrediction: (request: Request) => { model: string; input: Record<string, unknown> },
) {
  const id = 'replicate';
  const upstream = mediaUpstream(id, { timeoutMs: 30_000, ...config });
  const headers = { authorization: `Bearer ${config.apiToken}` };
  const call = (method: 'GET' | 'POST', path: string, options?: EngineOptions, body?: Record<string, unknown>) =>
    exchange(
      upstream,
      { method, url: joinUrl(config.baseUrl, path), headers, ...(body === undefined ? {} : { body }) },
      (response) => readJson(id, response, predictionSchema),
      options?.signal,
    );

  return {
    id,

    async create(request: Request, options?: EngineOptions) {
      const { model, input } = toPrediction(request);
      const [name, version] = model.split(':');
      const prediction =
        version === undefined
          ? await call('POST', `v1/models/${name}/predictions`, options, { input })
          : await call('POST', 'v1/predictions', options, { version: model, input });
      return { providerJobId: prediction.id };
    },

    async poll(providerJobId: string, options?: EngineOptions) {
      return outcome(await call('GET', `v1/predictions/${encodeURIComponent(providerJobId)}`, options));
    },

    async cancel(providerJobId: string, options?: EngineOptions) {
      await call('POST', `v1/predictions/${encodeURIComponent(providerJobId)}/cancel`, options);
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
