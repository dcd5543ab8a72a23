/** Request bodies of the media endpoints (gateway spec 4.3, 4.5). */
import { z } from 'zod';
import { jobStatuses } from '../../../../activities/media/job-view.ts';
import { defaultTtsVoice, openAIVoices, ttsVoices } from './voices.ts';

const maxText = 4096;

export const ttsSchema = z.object({
  text: z.string().trim().min(1).max(maxText, `must be at most ${maxText} characters`),
  voice: z
    .string()
    .refine((voice) => voice in ttsVoices, `unknown voice; one of ${Object.keys(ttsVoices).join(', ')}`)
    .default(defaultTtsVoice),
  speed: z.number().min(0.25).max(4).default(1),
});

export const speechSchema = z.object({
  model: z.enum(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']),
  input: z.string().trim().min(1).max(maxText, `must be at most ${maxText} characters`),
  voice: z.enum(openAIVoices as [string, ...string[]]),
  response_format: z.literal('mp3', 'only mp3 is served').default('mp3'),
  speed: z.number().min(0.25).max(4).default(1),
  instructions: z.string().max(maxText).optional(),
});

/**
 * `callback_url` on video and music jobs (beyond the spec): an http(s) URL without credentials, POSTed when the job
 * ends (activities/media/callbacks.ts). Its address is checked by the service (public addresses only).
 */
const callbackUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password;
    } catch {
      return false;
    }
  }, 'must be an http or https URL without credentials')
  .optional();

/** POST /api/v1/media/video: 5 or 10 seconds, standard or pro. */
export const videoSchema = z.object({
  prompt: z.string().trim().min(1).max(4000, 'must be at most 4000 characters'),
  duration: z.union([z.literal(5), z.literal(10)], 'must be 5 or 10').default(5),
  mode: z.enum(['standard', 'pro'], 'must be standard or pro').default('standard'),
  callback_url: callbackUrl,
});

/** Video prices (gateway spec 4.5): by mode and duration. */
export const videoCredits = (mode: 'standard' | 'pro', duration: 5 | 10) =>
  mode === 'standard' ? (duration === 5 ? 50 : 100) : duration === 5 ? 150 : 300;

/** A rough wait, in seconds, for a client to plan its polling: the provider's typical run time. */
export const videoEstimatedSeconds = (mode: 'standard' | 'pro', duration: 5 | 10) =>
  (mode === 'standard' ? 120 : 300) * (duration / 5);

/** POST /api/v1/media/music: 10, 30 or 60 seconds of music or a sound effect. */
export const musicSchema = z.object({
  prompt: z.string().trim().min(1).max(4000, 'must be at most 4000 characters'),
  type: z.enum(['music', 'sfx'], 'must be music or sfx').default('music'),
  duration: z.union([z.literal(10), z.literal(30), z.literal(60)], 'must be 10, 30 or 60').default(10),
  callback_url: callbackUrl,
});

/** Music prices (gateway spec 4.5): 10 s = 10, 30 s = 20, 60 s = 40 credits. */
export const musicCredits = (duration: 10 | 30 | 60) => ({ 10: 10, 30: 20, 60: 40 })[duration];

/**
 * POST /api/v1/media/image: the spec's four models under real names, each with its price and engines in fallback
 * order (the first is the model itself; a fallback serves the same prompt on the other provider's nearest model).
 * The spec's neutral names (`image_fast`, …) are accepted as aliases.
 */
export const imageModels = {
  'flux-schnell': {
    alias: 'image_fast',
    credits: 5,
    engines: [
      { engine: 'replicate', model: 'black-forest-labs/flux-schnell' },
      { engine: 'openai', model: 'dall-e-3' },
    ],
  },
  'flux-1.1-pro-ultra': {
    alias: 'image_realistic',
    credits: 10,
    engines: [
      { engine: 'replicate', model: 'black-forest-labs/flux-1.1-pro-ultra' },
      { engine: 'openai', model: 'gpt-image-1' },
    ],
  },
  'gpt-image-1': {
    alias: 'image_pro',
    credits: 15,
    engines: [
      { engine: 'openai', model: 'gpt-image-1' },
      { engine: 'replicate', model: 'black-forest-labs/flux-1.1-pro' },
    ],
  },
  'dall-e-3': {
    alias: 'image_hd_capable',
    credits: 10,
    engines: [
      { engine: 'openai', model: 'dall-e-3' },
      { engine: 'replicate', model: 'black-forest-labs/flux-1.1-pro' },
    ],
  },
} as const;

export type ImageModel = keyof typeof imageModels;
const imageAliases = Object.fromEntries(
  Object.entries(imageModels).map(([model, entry]) => [entry.alias, model as ImageModel]),
) as Record<string, ImageModel>;
/** The one model that takes `quality: hd` (20 credits instead of 10). */
export const hdCapableModel: ImageModel = 'dall-e-3';

export const imageSchema = z
  .object({
    prompt: z.string().trim().min(1).max(4000, 'must be at most 4000 characters'),
    model: z
      .string()
      .default('flux-schnell')
      .transform((model) => imageAliases[model] ?? model)
      .refine((model) => model in imageModels, `unknown model; one of ${Object.keys(imageModels).join(', ')}`)
      .transform((model) => model as ImageModel),
    size: z
      .enum(['1024x1024', '1792x1024', '1024x1792'], 'must be 1024x1024, 1792x1024 or 1024x1792')
      .default('1024x1024'),
    quality: z.enum(['standard', 'hd'], 'must be standard or hd').default('standard'),
  })
  .superRefine((request, context) => {
    if (request.quality === 'hd' && request.model !== hdCapableModel) {
      context.addIssue({
        code: 'custom',
        path: ['quality'],
        message: `hd is only available with ${hdCapableModel} (image_hd_capable)`,
      });
    }
  });

export const imageCredits = (model: ImageModel, quality: 'standard' | 'hd') =>
  model === hdCapableModel && quality === 'hd' ? 20 : imageModels[model].credits;

/** The image fields of remove-bg, upscale and OCR (exactly one is required: api/gateway/routes/media/inputs.ts). */
const imageInput = {
  image_url: z.string().trim().min(1).max(4096, 'must be at most 4096 characters').optional(),
  image_base64: z.string().trim().min(1).optional(),
};

export const removeBackgroundSchema = z.object({
  ...imageInput,
  quality: z.enum(['standard', 'hd'], 'must be standard or hd').default('standard'),
});
export const removeBackgroundCredits = (quality: 'standard' | 'hd') => (quality === 'hd' ? 15 : 8);

export const upscaleSchema = z.object({
  ...imageInput,
  scale: z.union([z.literal(2), z.literal(4)], 'must be 2 or 4').default(2),
  model: z.enum(['fast', 'quality'], 'must be fast or quality').default('fast'),
});
export const upscaleCredits = (scale: 2 | 4, model: 'fast' | 'quality') =>
  scale === 2 ? (model === 'fast' ? 12 : 15) : model === 'fast' ? 20 : 25;

export const ocrSchema = z.object({
  ...imageInput,
  language: z.enum(['ja', 'en', 'premium'], 'must be ja, en or premium').default('ja'),
  format: z.enum(['text', 'json'], 'must be text or json').default('text'),
});
export const ocrStandardCredits = 5;
export const ocrPremiumCredits = 10;

export const sfxSchema = z.object({
  prompt: z.string().trim().min(1).max(1000, 'must be at most 1000 characters'),
  duration: z.number('must be a number of seconds').min(1).max(10).default(3),
});

/**
 * Sound effect prices. The spec gives 3 s = 5, 5 s = 8 and 10 s = 17 credits; between and below those points the
 * price follows the straight lines through them (and through 0 s = 0), rounded up to a whole credit: 1 s = 2, 2 s = 4,
 * 4 s = 7, 6 s = 10, 7 s = 12, 8 s = 14, 9 s = 16. The three given points come out exactly.
 */
export function sfxCredits(duration: number): number {
  const points: Array<[number, number]> = [
    [0, 0],
    [3, 5],
    [5, 8],
    [10, 17],
  ];
  for (let index = 1; index < points.length; index++) {
    const [x0, y0] = points[index - 1]!;
    const [x1, y1] = points[index]!;
    if (duration <= x1) return Math.max(1, Math.ceil(y0 + ((duration - x0) * (y1 - y0)) / (x1 - x0) - 1e-9));
  }
  return 17;
}

export const sttSchema = z.object({
  language: z
    .string()
    .trim()
    .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, 'must be a language code such as ja or en')
    .optional(),
});
/** Transcription: 4 credits per started minute (OpenAI's transcription price, in the ratio the speech prices use). */
export const sttCredits = (durationSeconds: number) => 4 * Math.max(1, Math.ceil(durationSeconds / 60));
/** Every kind of media job `media_jobs` holds, for `GET /api/v1/media/jobs?kind=`. */
export const mediaJobKinds = [
  'tts',
  'speech',
  'video',
  'music',
  'image',
  'remove-bg',
  'upscale',
  'ocr',
  'sfx',
  'stt',
] as const;

/** A job's id as the API hands it out (18 random bytes, base64url), or the cursor of a jobs page (the same). */
const jobIdPattern = /^[A-Za-z0-9_-]{1,64}$/;

/** `GET /api/v1/media/jobs`: a page of the caller's jobs, newest first, after the cursor, optionally filtered. */
export const jobListSchema = z.object({
  limit: z.coerce.number('must be a number from 1 to 100').int().min(1).max(100).default(20),
  after: z.string().regex(jobIdPattern, "must be a job id (the previous page's next_cursor)").optional(),
  cursor: z.string().regex(jobIdPattern, "must be a job id (the previous page's next_cursor)").optional(),
  kind: z.enum(mediaJobKinds, `must be one of ${mediaJobKinds.join(', ')}`).optional(),
  status: z.enum(jobStatuses, `must be one of ${jobStatuses.join(', ')}`).optional(),
});

export type JobListQuery = z.infer<typeof jobListSchema>;

/** What `POST /api/v1/media/image` answers (and the agent service's `POST /image/generate`). */
export const imageResponseSchema = z.object({
  /** Paths under `/api/v1/media/files/`, served by both services to anyone holding the (unguessable) name. */
  images: z.array(z.object({ url: z.string() })),
  model: z.string(),
  credits_used: z.number().int(),
  /** The engine that served (a fallback's when the model's own failed). */
  engine: z.string(),
  job_id: z.string(),
});
export type ImageResponse = z.infer<typeof imageResponseSchema>;

/** What `POST /api/v1/media/stt` answers (and the agent service's `POST /transcribe`). */
export const transcriptionResponseSchema = z.object({
  text: z.string(),
  language: z.string().nullable(),
  /** Seconds of audio, which priced the job. */
  duration: z.number(),
  credits_used: z.number().int(),
  engine: z.string(),
  job_id: z.string(),
});
export type TranscriptionResponse = z.infer<typeof transcriptionResponseSchema>;
