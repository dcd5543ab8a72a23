/**
 * Media endpoints (gateway spec 4.3, 4.5): `POST /v1/audio/speech` (OpenAI-compatible) and `POST /api/v1/media/tts`
 * answer MP3 bytes with the serving engine in `X-Media-Engine` and the price in `X-Credits-Used`; `POST
 * /api/v1/media/video` (202) and `POST /api/v1/media/music` answer the job at once (run by the `mediaVideo` /
 * `mediaMusic` workflows, with an optional signed `callback_url`) and `GET /api/v1/media/{video|music}/{id}` show it
 * to its owner (cancel, list and the callback secret: job-routes.ts); `GET
 * /api/v1/media/files/{name}` serves stored results to anyone holding the (unguessable) name.
 */
import Router from '@koa/router';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import type { MediaJobResult } from '../../../../common/media.ts';
import { asyncJobView } from '../../../../activities/media/job-view.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import {
  musicCredits,
  musicSchema,
  speechSchema,
  ttsSchema,
  videoCredits,
  videoEstimatedSeconds,
  videoSchema,
} from './schema.ts';
import { idempotencyKeyOf } from './idempotency.ts';
import type { AsyncMediaJobs, MediaService } from './service.ts';
import { openAIVoiceEngines, speechCredits, ttsCredits, ttsVoices } from './voices.ts';

export function mediaRoutes(media: MediaService, jobs: AsyncMediaJobs): Router<AuthState> {
  const router = new Router<AuthState>();

  router.post('/v1/audio/speech', async (context) => {
    const parsed = speechSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { input, voice, speed } = parsed.data;
    const work = { kind: 'speech' as const, text: input, voice, speed, engines: openAIVoiceEngines(voice) };
    const create = {
      kind: work.kind,
      idempotencyKey: idempotencyKeyOf(context),
      request: parsed.data,
    };
    const served = await media.runOnce(context.state.principal, create, () => ({
      work,
      credits: speechCredits(input),
    }));
    await sendFile(context, media, served);
  });

  router.post('/api/v1/media/tts', ttsHandler(media));

  router.post('/api/v1/media/video', async (context) => {
    const parsed = videoSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { prompt, duration, mode, callback_url: callbackUrl } = parsed.data;
    const credits = videoCredits(mode, duration);
    const order = { kind: 'video' as const, prompt, duration, mode, credits, callbackUrl };
    const { jobId, status } = await jobs.create(context.state.principal, order, idempotencyKeyOf(context));
    context.status = 202;
    context.body = {
      video_id: jobId,
      status,
      estimated_time: videoEstimatedSeconds(mode, duration),
      credits_used: credits,
    };
  });

  router.get('/api/v1/media/video/:id', async (context) => {
    const job = await jobs.find(context.state.principal, 'video', context.params.id!);
    if (!job) throw new ApiError('not_found', 'No such video job');
    context.body = asyncJobView(job);
  });

  router.post('/api/v1/media/music', async (context) => {
    const parsed = musicSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { prompt, type, duration, callback_url: callbackUrl } = parsed.data;
    const credits = musicCredits(duration);
    const order = { kind: 'music' as const, prompt, type, duration, credits, callbackUrl };
    const { jobId, status } = await jobs.create(context.state.principal, order, idempotencyKeyOf(context));
    context.body = { music_id: jobId, status, credits_used: credits };
  });

  router.get('/api/v1/media/music/:id', async (context) => {
    const job = await jobs.find(context.state.principal, 'music', context.params.id!);
    if (!job) throw new ApiError('not_found', 'No such music job');
    context.body = asyncJobView(job);
  });

  return router;
}

/** A request of a keyed caller, as the media handlers take it (the agent service's doors too). */
export type MediaContext = Parameters<Parameters<Router<AuthState>['post']>[1]>[0];

/**
 * `POST /api/v1/media/tts` (and the agent service's `POST /tts`): `{text, voice?, speed?}`, answered with the MP3.
 */
export function ttsHandler(media: MediaService) {
  return async (context: MediaContext) => {
    const parsed = ttsSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { text, voice, speed } = parsed.data;
    const work = { kind: 'tts' as const, text, voice, speed, engines: ttsVoices[voice]! };
    const create = {
      kind: work.kind,
      idempotencyKey: idempotencyKeyOf(context),
      request: parsed.data,
    };
    const served = await media.runOnce(context.state.principal, create, () => ({ work, credits: ttsCredits(text) }));
    await sendFile(context, media, served);
  };
}

/** A speech job's MP3 as the response body, with the engine, price and job id in headers. */
async function sendFile(context: MediaContext, media: MediaService, served: MediaJobResult): Promise<void> {
  const file = await media.openResult(served);
  context.set('X-Media-Engine', served.engine);
  context.set('X-Credits-Used', String(served.credits));
  context.set('X-Media-Job-Id', served.jobId);
  context.type = file.contentType;
  context.length = file.size;
  context.body = file.stream;
}

/**
 * Stored files, by name, from whichever store is configured (local disk or S3, streamed through); no authentication
 * (the name is unguessable: activities/media/files.ts). An expired file is a 404 like a name never issued, before
 * and after the sweep deleted it; caches keep a file no longer than it is served.
 */
export function mediaFileRoutes(files: MediaFiles): Router {
  const router = new Router();
  router.get('/api/v1/media/files/:name', async (context) => {
    const file = await files.open(context.params.name!);
    if (!file) throw new ApiError('not_found', 'No such media file (files expire after MEDIA_FILE_TTL_DAYS)');
    const remaining = Math.max(0, Math.floor((file.expiresAt.getTime() - Date.now()) / 1000));
    context.type = file.contentType;
    context.length = file.size;
    context.set('Cache-Control', `private, max-age=${Math.min(86_400, remaining)}, immutable`);
    context.set('Expires', file.expiresAt.toUTCString());
    context.body = file.stream;
  });
  return router;
}
