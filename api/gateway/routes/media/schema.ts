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
