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
import type { AsyncMediaJobs, MediaService } from './service.ts';
import { openAIVoiceEngines, speechCredits, ttsCredits, ttsVoices } from './voices.ts';

export function mediaRoutes(media: MediaService, jobs: AsyncMediaJobs): Router<AuthState> {
  const router = new Router<AuthState>();

  router.post('/v1/audio/speech', async (context) => {
    const parsed = speechSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { input, voice, speed } = parsed.data;
    const served = await media.speak(context.state.principal, {
      kind: 'speech',
      text: input,
      voice,
      speed,
      engines: openAIVoiceEngines(voice),
      credits: speechCredits(input),
    });
    send(context, served);
  });

  router.post('/api/v1/media/tts', async (context) => {
    const parsed = ttsSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { text, voice, speed } = parsed.data;
    const served = await media.speak(context.state.principal, {
      kind: 'tts',
      text,
      voice,
      speed,
      engines: ttsVoices[voice]!,
      credits: ttsCredits(text),
    });
    send(context, served);
  });

  router.post('/api/v1/media/video', async (context) => {
    const parsed = videoSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { prompt, duration, mode, callback_url: callbackUrl } = parsed.data;
    const credits = videoCredits(mode, duration);
    const { jobId } = await jobs.create(context.state.principal, {
      kind: 'video',
      prompt,
      duration,
      mode,
      credits,
      callbackUrl,
    });
    context.status = 202;
    context.body = {
      video_id: jobId,
      status: 'queued',
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
    const { jobId } = await jobs.create(context.state.principal, {
      kind: 'music',
      prompt,
      type,
      duration,
      credits,
      callbackUrl,
    });
    context.body = { music_id: jobId, status: 'processing', credits_used: credits };
  });

  router.get('/api/v1/media/music/:id', async (context) => {
    const job = await jobs.find(context.state.principal, 'music', context.params.id!);
    if (!job) throw new ApiError('not_found', 'No such music job');
    context.body = asyncJobView(job);
  });

  return router;
}

function send(
  context: Parameters<Parameters<Router<AuthState>['post']>[1]>[0],
  served: Awaited<ReturnType<MediaService['speak']>>,
): void {
  context.set('X-Media-Engine', served.engine);
  context.set('X-Credits-Used', String(served.credits));
  context.set('X-Media-Job-Id', served.jobId);
  context.type = served.file.contentType;
  context.length = served.file.size;
  context.body = served.file.stream;
}

/** Stored results, by name; no authentication (the name is unguessable: activities/media/files.ts). */
export function mediaFileRoutes(files: MediaFiles): Router {
  const router = new Router();
  router.get('/api/v1/media/files/:name', async (context) => {
    const file = await files.open(context.params.name!);
    if (!file) throw new ApiError('not_found', 'No such media file');
    context.type = file.contentType;
    context.length = file.size;
    context.set('Cache-Control', 'private, max-age=86400, immutable');
    context.body = file.stream;
  });
  return router;
}
