/**
 * The agent service's media doors (api/agents/routes/media/routes.ts) take and answer exactly what the gateway's
 * media endpoints do: the same schemas, from the gateway's media route folder.
 */
import { z } from 'zod';
import {
  imageResponseSchema,
  imageSchema,
  sttSchema,
  transcriptionResponseSchema,
  ttsSchema,
} from '../../../gateway/routes/media/schema.ts';

/** `POST /tts`: JSON `{text, voice?, speed?}`; answered with the MP3 (`audio/mpeg`). */
export const ttsBodySchema = ttsSchema;
/** `POST /tts` answers the audio itself, with `X-Media-Engine`, `X-Credits-Used` and `X-Media-Job-Id`. */
export const ttsResponseSchema = z.instanceof(Uint8Array).describe('audio/mpeg');

/** `POST /transcribe`: multipart/form-data, the file in the part `audio` (MP3, WAV or M4A) and these text fields. */
export const transcribeFieldsSchema = sttSchema.extend({
  audio: z.instanceof(Uint8Array).describe('the audio file (multipart part `audio`)'),
});
export const transcribeResponseSchema = transcriptionResponseSchema;

/** `POST /image/generate`: `{prompt, model?, size?, quality?}`. */
export const imageGenerateBodySchema = imageSchema;
export const imageGenerateResponseSchema = imageResponseSchema;
