/** Contracts of the gateway's media endpoints (api/openapi/contract.ts). */
import { z } from 'zod';
import { jobStatuses } from '../../../../activities/media/job-view.ts';
import { bytes, isoDate, json, route, type RouteContract } from '../../../openapi/contract.ts';
import {
  imageResponseSchema,
  imageSchema,
  jobListSchema,
  mediaJobKinds,
  musicSchema,
  ocrSchema,
  removeBackgroundSchema,
  sfxSchema,
  speechSchema,
  sttSchema,
  transcriptionResponseSchema,
  ttsSchema,
  upscaleSchema,
  videoSchema,
} from './schema.ts';

const tags = ['Media'];
/** The `Idempotency-Key` header of a media job's create (the agent service's media doors take the same). */
export const idempotency = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .meta({ description: 'A retry with the same key answers the same job, charged once' }),
});

/** The errors of a media job that runs to its end in the request. */
export const mediaErrors = {
  402: 'Not enough credits',
  409: 'The Idempotency-Key was used with another request, or its job is still running',
  502: 'Every engine failed (nothing charged)',
  503: 'No engine configured for this request',
} as const;

const status = z.enum(jobStatuses);
const jobCommon = {
  status,
  duration: z.number().optional(),
  engine: z.string().nullable(),
  credits_used: z.number().int(),
  created_at: isoDate,
  completed_at: isoDate.optional(),
  expired: z.literal(true).optional().meta({ description: 'The output file passed its TTL' }),
  error: z.string().optional(),
  callback_url: z.string().optional(),
  callback_status: z.string().optional(),
};
export const videoJob = z
  .strictObject({
    video_id: z.string(),
    ...jobCommon,
    mode: z.string().optional(),
    url: z.string().optional(),
    video_url: z.string().optional(),
    thumbnail_url: z.string().optional(),
  })
  .meta({ id: 'VideoJob' });
export const musicJob = z
  .strictObject({ music_id: z.string(), ...jobCommon, type: z.string().optional(), audio_url: z.string().optional() })
  .meta({ id: 'MusicJob' });

/** The MP3 of a speech job, with its engine, price and job in headers. */
export const speechAnswer = bytes(
  ['audio/mpeg'],
  'The MP3',
  z.object({
    'x-media-engine': z.string().meta({ description: 'The engine that served' }),
    'x-credits-used': z.string().meta({ description: 'Credits charged' }),
    'x-media-job-id': z.string(),
  }),
);

/** `multipart/form-data` with the `audio` file and an optional `language`. */
export const transcriptionUpload = {
  'multipart/form-data': {
    schema: sttSchema.extend({ audio: z.file().meta({ description: 'The audio (MP3, WAV, OGG, M4A, WebM, FLAC)' }) }),
  },
};

const fileAnswer = (fields: z.ZodRawShape) =>
  z.strictObject({ ...fields, credits_used: z.number().int(), engine: z.string(), job_id: z.string() });

const jobRoutes = (['video', 'music'] as const).flatMap((kind): RouteContract[] => {
  const job = kind === 'video' ? videoJob : musicJob;
  return [
    route({
      method: 'GET',
      path: `/api/v1/media/${kind}/:id`,
      summary: `A ${kind} job`,
      tags,
      access: 'caller',
      responses: { 200: json(job, 'The job') },
      errors: { 404: 'No such job of the caller’s' },
    }),
    route({
      method: 'DELETE',
      path: `/api/v1/media/${kind}/:id`,
      summary: `Cancel a ${kind} job`,
      description: 'A queued or processing job: cancelled, its hold refunded, its callback sent.',
      tags,
      access: 'caller',
      responses: { 200: json(job, 'The job, cancelled') },
      errors: { 404: 'No such job of the caller’s', 409: 'The job has ended' },
    }),
  ];
});

const callbackSecret = z.strictObject({
  secret: z.string(),
  scheme: z.literal('standard-webhooks'),
  created_at: isoDate,
  rotated_at: isoDate.optional(),
  previous_secret_valid_until: isoDate.optional(),
});

/** Both services serve the stored files (the agent service's media doors answer these paths). */
export const mediaFileContract = route({
  method: 'GET',
  path: '/api/v1/media/files/:name',
  summary: 'A stored media file',
  description: 'Served to anyone holding its (unguessable) name until it expires (MEDIA_FILE_TTL_DAYS).',
  tags,
  access: 'public',
  responses: { 200: bytes(['audio/*', 'image/*', 'video/*', 'application/octet-stream'], 'The file') },
  errors: { 404: 'No such file, or it expired' },
});

export const mediaContracts: RouteContract[] = [
  route({
    method: 'POST',
    path: '/v1/audio/speech',
    summary: 'Text to speech (OpenAI-compatible)',
    tags,
    access: 'caller',
    request: { body: speechSchema, headers: idempotency },
    responses: { 200: speechAnswer },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/tts',
    summary: 'Text to speech',
    tags,
    access: 'caller',
    request: { body: ttsSchema, headers: idempotency },
    responses: { 200: speechAnswer },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/video',
    summary: 'Start a video job',
    tags,
    access: 'caller',
    request: { body: videoSchema, headers: idempotency },
    responses: {
      202: json(
        z.strictObject({
          video_id: z.string(),
          status,
          estimated_time: z.number().meta({ description: 'Seconds' }),
          credits_used: z.number().int(),
        }),
        'The job, queued',
      ),
    },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/music',
    summary: 'Start a music job',
    tags,
    access: 'caller',
    request: { body: musicSchema, headers: idempotency },
    responses: {
      200: json(z.strictObject({ music_id: z.string(), status, credits_used: z.number().int() }), 'The job, queued'),
    },
    errors: mediaErrors,
  }),
  ...jobRoutes,
  mediaFileContract,
  route({
    method: 'GET',
    path: '/api/v1/media/jobs',
    summary: 'The caller’s media jobs, newest first',
    tags,
    access: 'caller',
    request: { query: jobListSchema },
    responses: {
      200: json(
        z.strictObject({
          object: z.literal('list'),
          data: z.array(
            z.strictObject({
              id: z.string(),
              kind: z.enum(mediaJobKinds),
              status,
              engine: z.string().nullable(),
              credits_used: z.number().int(),
              created_at: isoDate,
              completed_at: isoDate.optional(),
              url: z.string().optional(),
              expired: z.literal(true).optional(),
              error: z.string().optional(),
            }),
          ),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
        'A page of jobs',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/media/callback-secret',
    summary: 'The caller’s callback signing secret',
    tags,
    access: 'caller',
    responses: { 200: json(callbackSecret, 'The secret (created on first use)') },
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/callback-secret/rotate',
    summary: 'Replace the callback signing secret',
    description: 'The previous secret keeps signing alongside for 24 hours.',
    tags,
    access: 'caller',
    responses: { 200: json(callbackSecret, 'The new secret') },
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/image',
    summary: 'Generate an image',
    tags,
    access: 'caller',
    request: { body: imageSchema, headers: idempotency },
    responses: { 200: json(imageResponseSchema.strict(), 'The images (paths under /api/v1/media/files/)') },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/remove-bg',
    summary: 'Remove an image’s background',
    tags,
    access: 'caller',
    request: { body: removeBackgroundSchema, headers: idempotency },
    responses: { 200: json(fileAnswer({ url: z.string() }), 'The PNG') },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/upscale',
    summary: 'Upscale an image',
    tags,
    access: 'caller',
    request: { body: upscaleSchema, headers: idempotency },
    responses: {
      200: json(
        fileAnswer({ url: z.string(), original_size: z.string(), upscaled_size: z.string() }),
        'The upscaled image',
      ),
    },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/ocr',
    summary: 'Read the text of an image',
    tags,
    access: 'caller',
    request: { body: ocrSchema, headers: idempotency },
    responses: {
      200: json(
        fileAnswer({
          text: z.string(),
          confidence: z.number(),
          language: z.string(),
          words: z.array(z.strictObject({ text: z.string(), confidence: z.number() })).optional(),
        }),
        'The text (`words` with `format: json`)',
      ),
    },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/sfx',
    summary: 'Generate a sound effect',
    tags,
    access: 'caller',
    request: { body: sfxSchema, headers: idempotency },
    responses: { 200: json(fileAnswer({ audio_url: z.string(), duration: z.number() }), 'The audio') },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/media/stt',
    summary: 'Transcribe audio',
    tags,
    access: 'caller',
    request: { content: transcriptionUpload, headers: idempotency },
    responses: { 200: json(transcriptionResponseSchema.strict(), 'The transcript') },
    errors: { ...mediaErrors, 413: 'The audio is too large', 415: 'Not an audio format the engine reads' },
  }),
];
