/** Request bodies of the media endpoints (gateway spec 4.3, 4.5). */
import { z } from 'zod';
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
