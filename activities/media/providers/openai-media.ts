/**
 * OpenAI's media endpoints as one engine (`openai`): speech (`POST /audio/speech`, MP3), images
 * (`POST /images/generations`) and transcription (`POST /audio/transcriptions`, multipart). It uses the same
 * `OPENAI_API_KEY` and `OPENAI_BASE_URL` as completions; the base URL includes `/v1`.
 *
 * Images: DALL·E models are asked for `b64_json`; GPT Image models always answer base64 and refuse
 * `response_format`, and take `quality` as low/medium/high (`hd` → high, `standard` → medium). An answer with URLs
 * (a compatible server may send them) is downloaded. Transcription asks `whisper-1` for `verbose_json` (language and
 * duration) and other models for `json`.
 *
 * OCR (`recognize`, the premium engine of POST /api/v1/media/ocr): a vision chat model (`gpt-4o-mini` by default) asked
 * through `POST /chat/completions` to transcribe the image verbatim, at temperature 0 with `logprobs`: the confidence is
 * the geometric mean of the answer's token probabilities (exp of the mean log probability), the nearest thing to an
 * OCR confidence a language model gives. Vision models read well over 100 languages and scripts.
 */
import { z } from 'zod';
import {
  type EngineOptions,
  type ImageEngine,
  type ImageRequest,
  type MediaFile,
  type OcrEngine,
  type SpeechEngine,
  type SpeechRequest,
  type TranscriptionEngine,
} from '../engine.ts';
import {
  downloadOutput,
  exchange,
  joinUrl,
  mediaUpstream,
  readFile,
  readJson,
  withDuration,
  type MediaHttpConfig,
} from './http.ts';

export interface OpenAIMediaConfig extends MediaHttpConfig {
  /** With the version path: `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Default `tts-1`. */
  speechModel?: string;
  /** Default `whisper-1`. */
  transcriptionModel?: string;
  /** The vision model that reads text for OCR; default `gpt-4o-mini`. */
  ocrModel?: string;
}

export type OpenAIMediaEngine = SpeechEngine & ImageEngine & TranscriptionEngine & OcrEngine;

const ocrAnswerSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable() }),
        logprobs: z
          .object({ content: z.array(z.object({ token: z.string(), logprob: z.number() })).nullable() })
          .nullable()
          .optional(),
      }),
    )
    .min(1),
});

const gptImageSizes: Record<string, string> = { '1792x1024': '1536x1024', '1024x1792': '1024x1536' };

const ocrInstructions =
  'You are an OCR engine. Transcribe every piece of text in the image exactly as written, in reading order, keeping ' +
  'line breaks. Do not translate, describe or comment. If the image holds no text, answer with nothing.';

const imagesResponseSchema = z.object({
  created: z.number(),
  data: z.array(z.union([z.object({ b64_json: z.string().min(1) }), z.object({ url: z.string().url() })])).min(1),
});

const transcriptionSchema = z.object({
  text: z.string(),
  language: z.string().optional(),
  duration: z.number().optional(),
});

/** verbose_json names the language in English; the engine interface speaks BCP 47. */
const languageCodes: Record<string, string> = {
  english: 'en',
  japanese: 'ja',
  french: 'fr',
  german: 'de',
  spanish: 'es',
  chinese: 'zh',
  korean: 'ko',
};

const fileNames: Record<string, string> = {
  'audio/mpeg': 'audio.mp3',
  'audio/mp3': 'audio.mp3',
  'audio/wav': 'audio.wav',
  'audio/x-wav': 'audio.wav',
  'audio/mp4': 'audio.m4a',
  'audio/x-m4a': 'audio.m4a',
  'audio/ogg': 'audio.ogg',
  'audio/webm': 'audio.webm',
  'audio/flac': 'audio.flac',
};

export function createOpenAIMediaEngine(config: OpenAIMediaConfig): OpenAIMediaEngine {
  const id = 'openai';
  const upstream = mediaUpstream(id, config);
  const headers = { authorization: `Bearer ${config.apiKey}` };
  const speechModel = config.speechModel ?? 'tts-1';
  const transcriptionModel = config.transcriptionModel ?? 'whisper-1';
  const ocrModel = config.ocrModel ?? 'gpt-4o-mini';

  return {
    id,

    async speak(request: SpeechRequest, options?: EngineOptions) {
      const body = {
        model: speechModel,
        input: request.text,
        voice: request.voice,
        response_format: 'mp3',
        speed: Math.min(4, Math.max(0.25, request.speed)),
      };
      return withDuration(
        await exchange(
          upstream,
          { method: 'POST', url: joinUrl(config.baseUrl, 'audio/speech'), headers, body },
          (response) => readFile(id, response, 'audio/'),
          options?.signal,
        ),
      );
    },

    async generate(request: ImageRequest, options?: EngineOptions) {
      const dallE = request.model.startsWith('dall-e');
      const body = {
        model: request.model,
        prompt: request.prompt,
        n: 1,
        // GPT Image draws landscape and portrait at 1536 px, DALL·E 3 at 1792 px.
        size: dallE ? request.size : (gptImageSizes[request.size] ?? request.size),
        ...(request.model === 'dall-e-2'
          ? {}
          : { quality: dallE ? request.quality : request.quality === 'hd' ? 'high' : 'medium' }),
        ...(dallE ? { response_format: 'b64_json' } : {}),
      };
      const answer = await exchange(
        upstream,
        { method: 'POST', url: joinUrl(config.baseUrl, 'images/generations'), headers, body },
        (response) => readJson(id, response, imagesResponseSchema),
        options?.signal,
      );
      const images: MediaFile[] = [];
      for (const image of answer.data) {
        if ('b64_json' in image) {
          images.push({ bytes: new Uint8Array(Buffer.from(image.b64_json, 'base64')), contentType: 'image/png' });
        } else {
          images.push(await downloadOutput(upstream, image.url, 'image/', options?.signal));
        }
      }
      return images;
    },

    async transcribe(audio: MediaFile, request: { language?: string }, options?: EngineOptions) {
      const verbose = transcriptionModel === 'whisper-1';
      const form = new FormData();
      const type = audio.contentType.split(';')[0]!.trim();
      form.set('file', new Blob([audio.bytes], { type }), fileNames[type] ?? 'audio.mp3');
      form.set('model', transcriptionModel);
      form.set('response_format', verbose ? 'verbose_json' : 'json');
      if (request.language !== undefined) form.set('language', request.language.split('-')[0]!);
      const answer = await exchange(
        upstream,
        { method: 'POST', url: joinUrl(config.baseUrl, 'audio/transcriptions'), headers, body: form },
        (response) => readJson(id, response, transcriptionSchema),
        options?.signal,
      );
      const language =
        answer.language === undefined
          ? request.language
          : (languageCodes[answer.language.toLowerCase()] ?? answer.language);
      return {
        text: answer.text.trim(),
        ...(language === undefined ? {} : { language }),
        ...(answer.duration === undefined ? {} : { durationSeconds: answer.duration }),
      };
    },

    async recognize(image: MediaFile, request: { language: string }, options?: EngineOptions) {
      const hint = request.language === 'premium' ? '' : ` The text is mostly in the language "${request.language}".`;
      const body = {
        model: ocrModel,
        temperature: 0,
        logprobs: true,
        messages: [
          { role: 'system', content: ocrInstructions + hint },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Transcribe the text in this image.' },
              {
                type: 'image_url',
                image_url: {
                  url: `data:${image.contentType};base64,${Buffer.from(image.bytes).toString('base64')}`,
                  detail: 'high',
                },
              },
            ],
          },
        ],
      };
      const answer = await exchange(
        upstream,
        { method: 'POST', url: joinUrl(config.baseUrl, 'chat/completions'), headers, body },
        (response) => readJson(id, response, ocrAnswerSchema),
        options?.signal,
      );
      const choice = answer.choices[0]!;
      const text = (choice.message.content ?? '').trim();
      const tokens = choice.logprobs?.content ?? [];
      const meanLogprob = tokens.reduce((sum, token) => sum + token.logprob, 0) / Math.max(1, tokens.length);
      // No log probabilities (a compatible server may omit them): no confidence can be claimed beyond "read".
      const confidence = tokens.length === 0 ? (text === '' ? 0 : 0.5) : Math.exp(meanLogprob);
      return { text, confidence: Math.round(confidence * 1000) / 1000 };
    },
  };
}
