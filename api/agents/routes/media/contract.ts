/** Contracts of the media doors: the gateway's media contracts at the agent service's paths (api/openapi/contract.ts). */
import { json, route } from '../../../openapi/contract.ts';
import { idempotency, mediaErrors, speechAnswer, transcriptionUpload } from '../../../gateway/routes/media/contract.ts';
import {
  imageGenerateBodySchema,
  imageGenerateResponseSchema,
  transcribeResponseSchema,
  ttsBodySchema,
} from './schema.ts';

const tags = ['Media'];

export const mediaDoorContracts = [
  route({
    method: 'POST',
    path: '/tts',
    summary: 'Text to speech (the gateway’s engines)',
    tags,
    access: 'caller',
    request: { body: ttsBodySchema, headers: idempotency },
    responses: { 200: speechAnswer },
    errors: mediaErrors,
  }),
  route({
    method: 'POST',
    path: '/transcribe',
    summary: 'Transcribe audio (the gateway’s engines)',
    tags,
    access: 'caller',
    request: { content: transcriptionUpload, headers: idempotency },
    responses: { 200: json(transcribeResponseSchema.strict(), 'The transcript') },
    errors: { ...mediaErrors, 413: 'The audio is too large', 415: 'Not an audio format the engine reads' },
  }),
  route({
    method: 'POST',
    path: '/image/generate',
    summary: 'Generate an image (the gateway’s engines)',
    tags,
    access: 'caller',
    request: { body: imageGenerateBodySchema, headers: idempotency },
    responses: { 200: json(imageGenerateResponseSchema.strict(), 'The images') },
    errors: mediaErrors,
  }),
];
