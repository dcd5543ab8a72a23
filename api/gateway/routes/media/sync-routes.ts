/**
 * The synchronous media endpoints beyond speech (gateway spec 4.5), each one `mediaJob` workflow run to its end:
 * `POST /api/v1/media/image`, `remove-bg`, `upscale`, `ocr`, `sfx` and `stt`. They answer the spec's shapes plus
 * `engine` (which engine served) and `job_id`; result files are paths under `/api/v1/media/files/`. Input images and
 * audio are checked and stored first (./inputs.ts), so a bad input is a 400 naming its field that holds no credits.
 */
import Router from '@koa/router';
import type { z } from 'zod';
import type { MediaJobResult, SyncJobWork } from '../../../../common/media.ts';
import { mediaFilePath } from '../../../../activities/media/files.ts';
import type { AuthState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import { storeAudioUpload, storeImageInput, type MediaInputOptions } from './inputs.ts';
import {
  imageCredits,
  imageModels,
  imageSchema,
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

function parse<Schema extends z.ZodType>(schema: Schema, body: unknown): z.output<Schema> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw invalidRequest(parsed.error);
  return parsed.data;
}

const served = (result: MediaJobResult) => ({ engine: result.engine, job_id: result.jobId });

export function syncMediaRoutes(media: MediaService, inputs: MediaInputOptions): Router<AuthState> {
  const router = new Router<AuthState>();
  router.post('/api/v1/media/image', async (context) => {
    const { prompt, model, size, quality } = parse(imageSchema, context.request.body);
    const work: SyncJobWork = { kind: 'image', prompt, model, size, quality, engines: [...imageModels[model].engines] };
    media.assertAvailable(work);
    const result = await media.run(context.state.principal, work, imageCredits(model, quality));
    context.body = {
      images: result.files.map((name) => ({ url: mediaFilePath(name) })),
      model,
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/remove-bg', async (context) => {
    const request = parse(removeBackgroundSchema, context.request.body);
    const check: SyncJobWork = { kind: 'remove-bg', inputFile: '', quality: request.quality, engines };
    media.assertAvailable(check);
    const { fileName } = await storeImageInput(request, inputs);
    const result = await media.run(
      context.state.principal,
      { ...check, inputFile: fileName },
      removeBackgroundCredits(request.quality),
    );
    context.body = { url: mediaFilePath(result.files[0]!), credits_used: result.credits, ...served(result) };
  });

  router.post('/api/v1/media/upscale', async (context) => {
    const request = parse(upscaleSchema, context.request.body);
    const upscalers = request.model === 'quality' ? ['replicate', 'sharp'] : ['sharp'];
    const check: SyncJobWork = {
      kind: 'upscale',
      inputFile: '',
      scale: request.scale,
      model: request.model,
      engines: upscalers,
    };
    media.assertAvailable(check);
    const { fileName } = await storeImageInput(request, inputs);
    const result = await media.run(
      context.state.principal,
      { ...check, inputFile: fileName },
      upscaleCredits(request.scale, request.model),
    );
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
    // Standard: tesseract in the language asked. Premium: a hosted vision model (any language), falling back to
    // tesseract's Japanese model (which reads Latin text too) at the standard price.
    const readers =
      request.language === 'premium'
        ? [
            { engine: 'openai', language: 'premium', credits: ocrPremiumCredits },
            { engine: 'tesseract', language: 'ja', credits: ocrStandardCredits },
          ]
        : [{ engine: 'tesseract', language: request.language, credits: ocrStandardCredits }];
    const check: SyncJobWork = {
      kind: 'ocr',
      inputFile: '',
      language: request.language,
      format: request.format,
      engines: readers,
    };
    media.assertAvailable(check);
    const { fileName } = await storeImageInput(request, inputs);
    const price = request.language === 'premium' ? ocrPremiumCredits : ocrStandardCredits;
    const result = await media.run(context.state.principal, { ...check, inputFile: fileName }, price);
    context.body = {
      text: result.data.text,
      confidence: result.data.confidence,
      language: request.language,
      ...(request.format === 'json' ? { words: result.data.words ?? [] } : {}),
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/sfx', async (context) => {
    const { prompt, duration } = parse(sfxSchema, context.request.body);
    const work: SyncJobWork = { kind: 'sfx', prompt, durationSeconds: duration, engines: ['elevenlabs'] };
    const result = await media.run(context.state.principal, work, sfxCredits(duration));
    context.body = {
      audio_url: mediaFilePath(result.files[0]!),
      duration: result.data.durationSeconds ?? duration,
      credits_used: result.credits,
      ...served(result),
    };
  });

  router.post('/api/v1/media/stt', async (context) => {
    const check: SyncJobWork = { kind: 'stt', inputFile: '', engines: ['openai'] };
    media.assertAvailable(check);
    const upload = await storeAudioUpload(context.req, inputs);
    const { language } = parse(sttSchema, upload.fields);
    const work: SyncJobWork = { ...check, inputFile: upload.fileName, ...(language ? { language } : {}) };
    const result = await media.run(context.state.principal, work, sttCredits(upload.durationSeconds));
    context.body = {
      text: result.data.text,
      language: result.data.language ?? language ?? null,
      duration: result.data.durationSeconds ?? upload.durationSeconds,
      credits_used: result.credits,
      ...served(result),
    };
  });

  return router;
}

/** Background removal: the hosted segmentation model, then the local plain-background engine. */
const engines = ['replicate', 'flood-fill'];
