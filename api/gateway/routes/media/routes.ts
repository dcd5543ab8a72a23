/**
 * Media endpoints (gateway spec 4.3, 4.5): `POST /v1/audio/speech` (OpenAI-compatible) and `POST /api/v1/media/tts`
 * answer MP3 bytes with the serving engine in `X-Media-Engine` and the price in `X-Credits-Used`; `POST
 * /api/v1/media/video` answers 202 with the job (run by the `mediaVideo` workflow) and `GET /api/v1/media/video/{id}`
 * shows it to its owner; `GET
 * /api/v1/media/files/{name}` serves stored results to anyone holding the (unguessable) name.
 */
import Router from '@koa/router';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { speechSchema, ttsSchema, videoCredits, videoEstimatedSeconds, videoSchema } from './schema.ts';
import type { MediaService, VideoJobs } from './service.ts';
import { openAIVoiceEngines, speechCredits, ttsCredits, ttsVoices } from './voices.ts';

export function mediaRoutes(media: MediaService, videos: VideoJobs): Router<AuthState> {
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
    const { prompt, duration, mode } = parsed.data;
    const credits = videoCredits(mode, duration);
    const { jobId } = await videos.create(context.state.principal, { prompt, duration, mode, credits });
    context.status = 202;
    context.body = {
      video_id: jobId,
      status: 'queued',
      estimated_time: videoEstimatedSeconds(mode, duration),
      credits_used: credits,
    };
  });

  router.get('/api/v1/media/video/:id', async (context) => {
    const view = await videos.view(context.state.principal, context.params.id!);
    if (!view) throw new ApiError('not_found', 'No such video job');
    context.body = view;
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
