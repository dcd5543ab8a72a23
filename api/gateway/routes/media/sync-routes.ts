/**
 * The synchronous media endpoints beyond speech (gateway spec 4.5), each one `mediaJob` workflow run to its end:
 * `POST /api/v1/media/image`, `remove-bg`, `upscale`, `ocr`, `sfx` and `stt`. They answer the spec's shapes plus
 * `engine` (which engine served) and `job_id`; result files are paths under `/api/v1/media/files/`. Input images and
 * audio are checked and stored first (./inputs.ts), so a bad input is a 400 naming its field that holds no credits.
 */
import Router from '@koa/router';
import type { z } from 'zod';
import type { MediaJobResult, SyncJobWork, SyncMediaKind } from '../../../../common/media.ts';
import { mediaFilePath } from '../../../../activities/media/files.ts';
import type { AuthState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import { idempotencyKeyOf } from './idempotency.ts';
import { storeAudioUpload, storeImageInput, type MediaInputOptions } from './inputs.ts';
import {
  imageCredits,
  imageModels,
  imageSchema,
  type ImageResponse,
  ocrPremiumCredits,
  ocrSchema,
  ocrStandardCredits,
  removeBackgroundCredits,
  removeBackgroundSchema,
  sfxCredits,
  sfxSchema,
  sttCredits,
  sttSchema,
  upscaleCredits,
  upscaleSchema,
} from './schema.ts';
import type { MediaService } from './service.ts';
import type { MediaContext } from './routes.ts';

function parse<Schema extends z.ZodType>(schema: Schema, body: unknown): z.output<Schema> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw invalidRequest(parsed.error);
  return parsed.data;
}

const served = (result: MediaJobResult) => ({ engine: result.engine, job_id: result.jobId });

export function syncMediaRoutes(media: MediaService, inputs: MediaInputOptions): Router<AuthState> {
  const router = new Router<AuthState>();

  router.post('/api/v1/media/image', imageHandler(media));

  router.post('/api/v1/media/remove-bg', async (context) => {
    const request = parse(removeBackgroundSchema, context.request.body);
    const work: SyncJobWork = { kind: 'remove-bg', inputFile: '', quality: request.quality, engines: removers };
    const result = await media.runOnce(context.state.principal, createOf(context, 'remove-bg', request), async () => {
      media.assertAvailable(work);
      const { fileName } = await storeImageInput(request, inputs);
      return { work: { ...work, inputFile: fileName }, credits: removeBackgroundCredits(request.quality) };
    });
    context.body = { url: mediaFilePath(result.files[0]!), credits_used: result.credits, ...served(result) };
  });

  router.post('/api/v1/media/upscale', async (context) => {
    const request = parse(upscaleSchema, context.request.body);
    const { scale, model } = request;
    const upscalers = model === 'quality' ? ['replicate', 'sharp'] : ['sharp'];
    const work: SyncJobWork = { kind: 'upscale', inputFile: '', scale, model, engines: upscalers };
    const result = await media.runOnce(context.state.principal, createOf(context, 'upscale', request), async () => {
      media.assertAvailable(work);
      const { fileName } = await storeImageInput(request, inputs);
      return { work: { ...work, inputFile: fileName }, credits: upscaleCredits(scale, model) };
    });
    context.body = {
      url: mediaFilePath(result.files[0]!),
      original_size: result.data.originalSize,
      upscaled_size: result.data.upscaledSize,
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/ocr', async (context) => {
    const request = parse(ocrSchema, context.request.body);
    const { language, format } = request;
    // Standard: tesseract in the language asked. Premium: a hosted vision model (any language), falling back to
    // tesseract's Japanese model (which reads Latin text too) at the standard price.
    const readers =
      language === 'premium'
        ? [
            { engine: 'openai', language: 'premium', credits: ocrPremiumCredits },
            { engine: 'tesseract', language: 'ja', credits: ocrStandardCredits },
          ]
        : [{ engine: 'tesseract', language, credits: ocrStandardCredits }];
    const work: SyncJobWork = { kind: 'ocr', inputFile: '', language, format, engines: readers };
    const result = await media.runOnce(context.state.principal, createOf(context, 'ocr', request), async () => {
      media.assertAvailable(work);
      const { fileName } = await storeImageInput(request, inputs);
      const price = language === 'premium' ? ocrPremiumCredits : ocrStandardCredits;
      return { work: { ...work, inputFile: fileName }, credits: price };
    });
    context.body = {
      text: result.data.text,
      confidence: result.data.confidence,
      language,
      ...(format === 'json' ? { words: result.data.words ?? [] } : {}),
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/sfx', async (context) => {
    const request = parse(sfxSchema, context.request.body);
    const { prompt, duration } = request;
    const work: SyncJobWork = { kind: 'sfx', prompt, durationSeconds: duration, engines: ['elevenlabs'] };
    const result = await media.runOnce(context.state.principal, createOf(context, 'sfx', request), () => ({
      work,
      credits: sfxCredits(duration),
    }));
    context.body = {
      audio_url: mediaFilePath(result.files[0]!),
      duration: result.data.durationSeconds ?? duration,
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/stt', sttHandler(media, inputs));

  return router;
}

/** The create as runOnce takes it: its kind, the caller's Idempotency-Key, the validated request. */
const createOf = (context: { get(field: string): string }, kind: SyncMediaKind, request: unknown) => ({
  kind,
  idempotencyKey: idempotencyKeyOf(context),
  request,
});

/**
 * `POST /api/v1/media/image` (and the agent service's `POST /image/generate`): `{prompt, model?, size?, quality?}`,
 * answered with `{images: [{url}], model, credits_used, engine, job_id}`.
 */
export function imageHandler(media: MediaService) {
  return async (context: MediaContext) => {
    const request = parse(imageSchema, context.request.body);
    const { prompt, model, size, quality } = request;
    const work: SyncJobWork = { kind: 'image', prompt, model, size, quality, engines: [...imageModels[model].engines] };
    const result = await media.runOnce(context.state.principal, createOf(context, 'image', request), () => ({
      work,
      credits: imageCredits(model, quality),
    }));
    context.body = {
      images: result.files.map((name) => ({ url: mediaFilePath(name) })),
      model,
      credits_used: result.credits,
      ...served(result),
    } satisfies ImageResponse;
  };
}

/**
 * `POST /api/v1/media/stt` (and the agent service's `POST /transcribe`): multipart with the `audio` file and an
 * optional `language`, answered with `{text, language, duration, credits_used, engine, job_id}`.
 */
export function sttHandler(media: MediaService, inputs: MediaInputOptions) {
  return async (context: MediaContext) => {
    const check: SyncJobWork = { kind: 'stt', inputFile: '', engines: ['openai'] };
    media.assertAvailable(check);
    // The upload is read first: the request to compare a repeat with is the audio itself.
    const upload = await storeAudioUpload(context.req, inputs);
    const { language } = parse(sttSchema, upload.fields);
    const request = { audio: upload.sha256, language };
    const work: SyncJobWork = { ...check, inputFile: upload.fileName, ...(language ? { language } : {}) };
    const result = await media.runOnce(context.state.principal, createOf(context, 'stt', request), () => ({
      work,
      credits: sttCredits(upload.durationSeconds),
    }));
    context.body = {
      text: result.data.text,
      language: result.data.language ?? language ?? null,
      duration: result.data.durationSeconds ?? upload.durationSeconds,
      credits_used: result.credits,
      ...served(result),
    };
  };
}

/** Background removal: the hosted segmentation model, then the local plain-background engine. */
const removers = ['replicate', 'flood-fill'];
