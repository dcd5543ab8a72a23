/**
 * Hosted media providers as their APIs answer, for the media engines (activities/media/providers/):
 *
 * - OpenAI (protocol `openai-media`, base URL `${sim}/v1`, `Authorization: Bearer`): `POST /v1/audio/speech`
 *   ({model, input, voice, response_format mp3|wav, speed} → audio bytes), `POST /v1/images/generations`
 *   ({model, prompt, n, size, quality, response_format b64_json|url} → {created, data: [{b64_json|url,
 *   revised_prompt}]}; URLs are served under `/openai/files/`), `POST /v1/audio/transcriptions` (multipart: file,
 *   model, language, response_format json|text|verbose_json → {text} …).
 * - ElevenLabs (protocol `elevenlabs`, base URL `${sim}`, `xi-api-key`): `POST /v1/text-to-speech/{voice_id}` ({text,
 *   model_id, voice_settings}, `?output_format=mp3_…` → audio/mpeg) and `POST /v1/sound-generation` ({text,
 *   duration_seconds, prompt_influence} → audio/mpeg).
 * - Replicate (protocol `replicate`, base URL `${sim}`, `Authorization: Bearer|Token`): `POST /v1/predictions`
 *   ({version, input}), `POST /v1/models/{owner}/{name}/predictions` ({input}), `GET /v1/predictions/{id}`,
 *   `POST /v1/predictions/{id}/cancel`, `GET /v1/predictions` (every prediction, newest first, 100 a page, `?cursor=`
 *   from the page's `next`: how a client finds the predictions it made, and the times each one ran); outputs are URLs
 *   under `/replicate/files/<id>.mp3|.mp4|.png`, by what the model's name says it makes: a background remover
 *   (background, rembg, matting) answers its `input.image` (a data URI) as a PNG with the pixels near the corner's
 *   colour transparent; an upscaler (esrgan, upscale) resizes it by `input.scale`; an image model (flux, sdxl,
 *   diffusion, image, …) draws a PNG of its `aspect_ratio`; music, audio, sound, song or speech models give an MP3;
 *   anything else an MP4.
 *
 * Files are real (simulator/media-files.ts). Speech MP3s carry their text, so transcribing one gives it back; other
 * audio is transcribed to a sentence derived from its bytes. A prediction runs for `mediaJobMs` (SimulatorOptions; default
 * `SIM_MEDIA_JOB_MS`, else 1500 ms)
 * — `starting` for its first fifth, `processing` (with tqdm-style percentages in `logs`) until done — and then
 * succeeds. Directives in the prompt: `[[takes 3s]]` / `[[takes 400ms]]` sets the run time, `[[polls 4]]` runs it by
 * polls instead of the clock (`starting` at the first poll, `processing` at the next ones, ended at the 4th, or at
 * the first with `[[polls 1]]`: a test
 * sees each state whatever its machine's speed), `[[fail]]` ends it `failed` with an error, `[[poll-error 2]]`
 * answers the first 2 polls with 500.
 *
 * Every request is recorded in the request log (model: the body's model, ElevenLabs' model_id, Replicate's
 * owner/name; a poll or cancel counts under its prediction's model) and takes faults matching its protocol and
 * model: `latency_ms` and `status` apply to every endpoint, the body faults (stall, cut, malformed) to JSON replies,
 * and `cut_after_tokens` to audio as well (half the bytes, then the connection drops).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import sharp from 'sharp';
import { z } from 'zod';
import type { Fault, FaultRegistry, Protocol } from '../faults.ts';
import {
  simulatedMp3,
  simulatedMp3Seconds,
  simulatedVideo,
  simulatedPng,
  simulatedWav,
  transcriptOf,
} from '../media-files.ts';
import { headerValue, simulatedId } from '../protocols/protocol.ts';
import type { RequestLog } from '../request-log.ts';
import { pause, sendJson, sendJsonReply } from '../transport.ts';

const maxBodyBytes = 32 * 1024 * 1024;
const maxStoredFiles = 500;

interface MediaState {
  faults: FaultRegistry;
  requests: RequestLog;
  /** How long a prediction without a `[[takes …]]` directive runs. */
  jobMs: number;
}

export interface MediaService {
  handles(pathname: string): boolean;
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
}

interface Prediction {
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  createdAt: number;
  runMs: number;
  failure: string | undefined;
  pollErrors: number;
  /** `[[polls N]]`: the run ends at the N-th poll (a poll answered 500 does not count); `seen` polls so far. */
  byPolls: { total: number; seen: number } | undefined;
  canceledAt: number | undefined;
  output: { extension: 'mp3' | 'mp4' | 'png'; seconds: number };
}

/** One exchange as routed: who answers it, under which model, with which fault. */
interface Exchange {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  origin: string;
  fault: Fault;
  signal: AbortSignal;
}

const routes: Array<{ method: string; pattern: RegExp; protocol: Protocol; name: string }> = [
  { method: 'POST', pattern: /^\/v1\/audio\/speech$/, protocol: 'openai-media', name: 'speech' },
  { method: 'POST', pattern: /^\/v1\/images\/generations$/, protocol: 'openai-media', name: 'images' },
  { method: 'POST', pattern: /^\/v1\/audio\/transcriptions$/, protocol: 'openai-media', name: 'transcriptions' },
  { method: 'POST', pattern: /^\/v1\/text-to-speech\/([^/]+)(?:\/stream)?$/, protocol: 'elevenlabs', name: 'tts' },
  { method: 'POST', pattern: /^\/v1\/sound-generation$/, protocol: 'elevenlabs', name: 'sfx' },
  { method: 'POST', pattern: /^\/v1\/predictions$/, protocol: 'replicate', name: 'create' },
  { method: 'POST', pattern: /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/, protocol: 'replicate', name: 'create' },
  { method: 'GET', pattern: /^\/v1\/predictions$/, protocol: 'replicate', name: 'list' },
  { method: 'GET', pattern: /^\/v1\/predictions\/([^/]+)$/, protocol: 'replicate', name: 'get' },
  { method: 'POST', pattern: /^\/v1\/predictions\/([^/]+)\/cancel$/, protocol: 'replicate', name: 'cancel' },
];

export function createMediaService(state: MediaState): MediaService {
  const files = new Map<string, { bytes: Buffer; contentType: string }>();
  const predictions = new Map<string, Prediction>();

  const store = (bytes: Buffer, contentType: string, id: string): void => {
    files.set(id, { bytes, contentType });
    if (files.size > maxStoredFiles) files.delete(files.keys().next().value!);
  };

  return {
    handles: (pathname) =>
      pathname.startsWith('/openai/files/') ||
      pathname.startsWith('/replicate/files/') ||
      routes.some((route) => route.pattern.test(pathname)),

    async handle(request, response, url) {
      const fileMatch = /^\/(openai|replicate)\/files\/([A-Za-z0-9_-]+\.(?:png|mp3|mp4))$/.exec(url.pathname);
      if (fileMatch) {
        const file = request.method === 'GET' ? files.get(`${fileMatch[1]}/${fileMatch[2]}`) : undefined;
        if (file === undefined) return sendJson(response, 404, { error: 'Not found' });
        response.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
        response.end(file.bytes);
        return;
      }
      const method = request.method ?? 'GET';
      const route = routes.find((candidate) => candidate.method === method && candidate.pattern.test(url.pathname));
      if (route === undefined) {
        return sendJson(response, 405, { error: { message: `No route for ${method} ${url.pathname}` } });
      }
      const params = route.pattern.exec(url.pathname)!.slice(1).map(decodeURIComponent);
      // A poll and a cancel carry no body.
      const body = method === 'GET' || route.name === 'cancel' ? {} : await readBody(request);
      if (body === undefined) {
        return sendJson(response, 400, errorBody(route.protocol, 400, 'The request body is not valid.'));
      }
      const prediction = route.name === 'get' || route.name === 'cancel' ? predictions.get(params[0]!) : undefined;
      const model = modelOf(route.name, body, params, prediction);
      state.requests.record({
        protocol: route.protocol,
        model,
        path: `${url.pathname}${url.search}`,
        headers: flatHeaders(request),
        body: body instanceof FormData ? formSummary(body) : body,
      });
      const authentication = authenticationError(route.protocol, request);
      if (authentication !== undefined) {
        return sendJson(response, 401, errorBody(route.protocol, 401, authentication.message, authentication.code));
      }

      const clientGone = new AbortController();
      response.once('close', () => clientGone.abort());
      response.on('error', () => {
        // Writes racing a client disconnect fail; the close handler already stopped the reply.
      });
      const fault = state.faults.take(route.protocol, model) ?? {};
      if (fault.latency_ms !== undefined && !(await pause(fault.latency_ms, clientGone.signal))) return;
      if (fault.status !== undefined) {
        const headers: Record<string, string> =
          fault.retry_after === undefined ? {} : { 'retry-after': String(fault.retry_after) };
        return sendJson(
          response,
          fault.status,
          errorBody(route.protocol, fault.status, faultMessage(fault.status)),
          headers,
        );
      }
      const exchange: Exchange = {
        request,
        response,
        url,
        origin: `http://${request.headers.host ?? 'localhost'}`,
        fault,
        signal: clientGone.signal,
      };
      // Body faults act on 200 replies (sendJsonReply answers 200); errors and 201s go out whole.
      const reply = (status: number, json: unknown) =>
        status === 200 ? sendJsonReply(response, json, fault, clientGone.signal) : sendJson(response, status, json);

      switch (route.name) {
        case 'speech':
          return openAISpeech(exchange, body);
        case 'images':
          return openAIImages(exchange, body, store, reply);
        case 'transcriptions':
          return openAITranscription(exchange, body, reply);
        case 'tts':
          return elevenLabsSpeech(exchange, params[0]!, body);
        case 'sfx':
          return elevenLabsSoundEffect(exchange, body);
        case 'create':
          return createPrediction(exchange, body, params, { predictions, store, jobMs: state.jobMs }, reply);
        case 'list':
          return listPredictions(exchange, predictions, reply);
        default:
          return predictionCall(exchange, route.name, params[0]!, prediction, reply);
      }
    },
  };
}

type Reply = (status: number, json: unknown) => Promise<void> | void;
type Store = (bytes: Buffer, contentType: string, id: string) => void;

// ---------------------------------------------------------------- OpenAI

const openAIVoices = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'];

const speechSchema = z.object({
  model: z.string().min(1),
  input: z.string().min(1).max(4096),
  voice: z.enum(openAIVoices),
  response_format: z.enum(['mp3', 'wav']).default('mp3'),
  speed: z.number().min(0.25).max(4).default(1),
  instructions: z.string().optional(),
});

async function openAISpeech(exchange: Exchange, body: unknown): Promise<void> {
  const parsed = speechSchema.safeParse(body);
  if (!parsed.success) return invalid(exchange, 'openai-media', parsed.error);
  const { input, speed, response_format: format } = parsed.data;
  const seconds = spokenSeconds(input, speed);
  const bytes = format === 'wav' ? simulatedWav(seconds) : simulatedMp3(seconds, input);
  await sendBinary(exchange, bytes, format === 'wav' ? 'audio/wav' : 'audio/mpeg');
}

const imageSizes: Record<string, string[]> = {
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
  'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
  'gpt-image-1': ['1024x1024', '1536x1024', '1024x1536', 'auto'],
};

const imagesSchema = z.object({
  model: z.string().min(1).default('dall-e-2'),
  prompt: z.string().min(1).max(32_000),
  n: z.number().int().min(1).max(10).default(1),
  size: z.string().default('1024x1024'),
  quality: z.enum(['standard', 'hd', 'low', 'medium', 'high', 'auto']).optional(),
  response_format: z.enum(['url', 'b64_json']).optional(),
  style: z.enum(['vivid', 'natural']).optional(),
  user: z.string().optional(),
});

async function openAIImages(exchange: Exchange, body: unknown, store: Store, reply: Reply): Promise<void> {
  const parsed = imagesSchema.safeParse(body);
  if (!parsed.success) return invalid(exchange, 'openai-media', parsed.error);
  const request = parsed.data;
  const sizes = imageSizes[request.model] ?? imageSizes['gpt-image-1']!;
  const gptImage = !request.model.startsWith('dall-e');
  const problem = !sizes.includes(request.size)
    ? `Invalid size '${request.size}' for ${request.model}. Supported sizes are ${sizes.join(', ')}.`
    : request.model === 'dall-e-3' && request.n !== 1
      ? 'You must provide n=1 for this model.'
      : gptImage && request.response_format !== undefined
        ? "Unknown parameter: 'response_format'."
        : undefined;
  if (problem !== undefined) return reply(400, errorBody('openai-media', 400, problem));
  const [width, height] = (request.size === 'auto' ? '1024x1024' : request.size).split('x').map(Number);
  const data = [];
  for (let index = 0; index < request.n; index++) {
    const png = await simulatedPng(`${request.prompt}#${index}`, width!, height!);
    const revised = request.model === 'dall-e-3' ? { revised_prompt: `A detailed image of ${request.prompt}` } : {};
    if (request.response_format === 'url') {
      const id = `img-${simulatedId(24)}`;
      store(png, 'image/png', `openai/${id}.png`);
      data.push({ url: `${exchange.origin}/openai/files/${id}.png`, ...revised });
    } else {
      data.push({ b64_json: png.toString('base64'), ...revised });
    }
  }
  await reply(200, { created: Math.floor(Date.now() / 1000), data });
}

const transcriptionSchema = z.object({
  model: z.string().min(1),
  language: z.string().min(2).max(12).optional(),
  response_format: z.enum(['json', 'text', 'verbose_json']).default('json'),
  prompt: z.string().optional(),
  temperature: z.coerce.number().optional(),
});

const languageNames: Record<string, string> = { en: 'english', ja: 'japanese', fr: 'french', de: 'german' };

async function openAITranscription(exchange: Exchange, body: unknown, reply: Reply): Promise<void> {
  if (!(body instanceof FormData)) {
    return reply(400, errorBody('openai-media', 400, 'Expected a multipart/form-data request body.'));
  }
  const file = body.get('file');
  if (!(file instanceof File)) return reply(400, errorBody('openai-media', 400, "Missing required parameter: 'file'."));
  const fields = Object.fromEntries(
    [...body.entries()].filter(([name, value]) => name !== 'file' && typeof value === 'string'),
  );
  const parsed = transcriptionSchema.safeParse(fields);
  if (!parsed.success) return invalid(exchange, 'openai-media', parsed.error);
  if (parsed.data.response_format === 'verbose_json' && parsed.data.model !== 'whisper-1') {
    const message = `response_format 'verbose_json' is not compatible with model '${parsed.data.model}'.`;
    return reply(400, errorBody('openai-media', 400, message));
  }
  const bytes = Buffer.from(await file.arrayBuffer());
  const text =
    transcriptOf(bytes) ??
    `Simulated transcript of ${bytes.length} bytes of audio (${createHash('sha256').update(bytes).digest('hex').slice(0, 8)}).`;
  const language = parsed.data.language ?? 'en';
  const duration = Math.round((bytes.length / 4000) * 100) / 100;
  if (parsed.data.response_format === 'text') {
    exchange.response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    exchange.response.end(`${text}\n`);
    return;
  }
  await reply(
    200,
    parsed.data.response_format === 'json'
      ? { text }
      : {
          task: 'transcribe',
          language: languageNames[language] ?? language,
          duration,
          text,
          segments: [{ id: 0, seek: 0, start: 0, end: duration, text, tokens: [], temperature: 0 }],
        },
  );
}

// ---------------------------------------------------------------- ElevenLabs

const outputFormatSchema = z
  .string()
  .regex(/^mp3_(22050_32|44100_(32|64|96|128|192))$/, 'the simulator renders the mp3_* output formats')
  .default('mp3_44100_128');

const elevenLabsSpeechSchema = z.object({
  text: z.string().min(1).max(10_000),
  model_id: z.string().min(1).default('eleven_multilingual_v2'),
  language_code: z.string().optional(),
  voice_settings: z
    .object({
      stability: z.number().min(0).max(1).optional(),
      similarity_boost: z.number().min(0).max(1).optional(),
      style: z.number().min(0).max(1).optional(),
      use_speaker_boost: z.boolean().optional(),
      speed: z.number().min(0.7).max(1.2).optional(),
    })
    .optional(),
});

async function elevenLabsSpeech(exchange: Exchange, voiceId: string, body: unknown): Promise<void> {
  const parsed = elevenLabsSpeechSchema.safeParse(body);
  if (!parsed.success) return invalid(exchange, 'elevenlabs', parsed.error);
  const format = outputFormatSchema.safeParse(exchange.url.searchParams.get('output_format') ?? undefined);
  if (!format.success) return invalid(exchange, 'elevenlabs', format.error);
  if (!/^[A-Za-z0-9]{1,64}$/.test(voiceId)) {
    const message = `A voice with the voice_id ${voiceId} was not found.`;
    return sendJson(exchange.response, 404, { detail: { status: 'voice_not_found', message } });
  }
  const { text, voice_settings: settings } = parsed.data;
  const bytes = simulatedMp3(spokenSeconds(text, settings?.speed ?? 1), text);
  await sendBinary(exchange, bytes, 'audio/mpeg', {
    'request-id': simulatedId(20),
    'x-character-count': String(text.length),
  });
}

const soundSchema = z.object({
  text: z.string().min(1).max(1000),
  model_id: z.string().min(1).default('eleven_text_to_sound_v2'),
  duration_seconds: z.number().min(0.5).max(30).nullable().optional(),
  prompt_influence: z.number().min(0).max(1).nullable().optional(),
  loop: z.boolean().optional(),
});

async function elevenLabsSoundEffect(exchange: Exchange, body: unknown): Promise<void> {
  const parsed = soundSchema.safeParse(body);
  if (!parsed.success) return invalid(exchange, 'elevenlabs', parsed.error);
  const format = outputFormatSchema.safeParse(exchange.url.searchParams.get('output_format') ?? undefined);
  if (!format.success) return invalid(exchange, 'elevenlabs', format.error);
  // Without a duration the real API guesses one from the prompt.
  const seconds = parsed.data.duration_seconds ?? Math.min(10, 2 + parsed.data.text.split(/\s+/).length / 4);
  await sendBinary(exchange, simulatedMp3(seconds), 'audio/mpeg', { 'request-id': simulatedId(20) });
}

// ---------------------------------------------------------------- Replicate

const predictionSchema = z.object({
  version: z.string().min(1).optional(),
  input: z.record(z.string(), z.unknown()),
  webhook: z.string().optional(),
  webhook_events_filter: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
});

async function createPrediction(
  exchange: Exchange,
  body: unknown,
  params: string[],
  { predictions, store, jobMs }: { predictions: Map<string, Prediction>; store: Store; jobMs: number },
  reply: Reply,
): Promise<void> {
  const parsed = predictionSchema.safeParse(body);
  if (!parsed.success) return invalid(exchange, 'replicate', parsed.error);
  const { input, version: requestedVersion } = parsed.data;
  const model = params.length === 2 ? `${params[0]}/${params[1]}` : modelOfVersion(requestedVersion);
  if (model === undefined) {
    return reply(422, replicateError(422, 'Invalid version or not permitted', '- version: version is required'));
  }
  const kind = predictionKind(model);
  let image: Buffer | undefined;
  if (kind === 'remove-bg' || kind === 'upscale') {
    image = dataUriBytes(input.image);
    if (image === undefined) {
      return reply(
        422,
        replicateError(422, 'Input validation failed', '- input.image: a data: URI of an image is required'),
      );
    }
  } else if (typeof input.prompt !== 'string' || input.prompt.trim() === '') {
    return reply(422, replicateError(422, 'Input validation failed', '- input: prompt is required'));
  }
  const prompt = typeof input.prompt === 'string' ? input.prompt : '';
  const takes = /\[\[takes (\d+(?:\.\d+)?)(ms|s)\]\]/.exec(prompt);
  const pollErrors = /\[\[poll-error (\d+)\]\]/.exec(prompt);
  const polls = /\[\[polls (\d+)\]\]/.exec(prompt);
  const audio = kind === 'audio';
  const requestedSeconds = Number(input.duration ?? input.duration_seconds ?? (audio ? 8 : 5));
  const extension = kind === 'audio' ? 'mp3' : kind === 'video' ? 'mp4' : 'png';
  const prediction: Prediction = {
    id: simulatedId(26).toLowerCase(),
    model,
    version: requestedVersion?.split(':').at(-1) ?? createHash('sha256').update(model).digest('hex'),
    input,
    createdAt: Date.now(),
    runMs: polls ? pollRunMs : takes ? Number(takes[1]) * (takes[2] === 's' ? 1000 : 1) : jobMs,
    failure: /\[\[fail\]\]/.test(prompt)
      ? 'Simulated failure: the model could not generate an output for this prompt.'
      : undefined,
    pollErrors: pollErrors ? Number(pollErrors[1]) : 0,
    byPolls: polls ? { total: Math.max(1, Number(polls[1])), seen: 0 } : undefined,
    canceledAt: undefined,
    output: {
      extension,
      seconds: Number.isFinite(requestedSeconds) && requestedSeconds > 0 ? Math.min(requestedSeconds, 60) : 5,
    },
  };
  // The output exists once the run succeeds; making it now keeps the GET handler synchronous.
  let bytes: Buffer;
  try {
    bytes = await predictionOutput(kind, prediction, image);
  } catch {
    return reply(422, replicateError(422, 'Input validation failed', '- input.image: the image cannot be decoded'));
  }
  // The run starts now that its output exists (encoding a video takes a moment): `starting` is seen first.
  prediction.createdAt = Date.now();
  predictions.set(prediction.id, prediction);
  const contentType = { mp3: 'audio/mpeg', mp4: 'video/mp4', png: 'image/png' }[extension];
  store(bytes, contentType, `replicate/${prediction.id}.${extension}`);

  // `Prefer: wait[=n]` holds the response until the prediction ends or n seconds (default 60) pass.
  const prefer = /^wait(?:=(\d+))?$/.exec(headerValue(exchange.request.headers, 'prefer') ?? '');
  if (prefer && !prediction.byPolls) {
    const waitMs = Math.min(prediction.runMs, Number(prefer[1] ?? 60) * 1000);
    if (!(await pause(waitMs, exchange.signal))) return;
  }
  await reply(201, renderPrediction(prediction, exchange.origin));
}

async function predictionCall(
  exchange: Exchange,
  action: string,
  id: string,
  prediction: Prediction | undefined,
  reply: Reply,
): Promise<void> {
  if (prediction === undefined) {
    return reply(404, replicateError(404, 'Not found', 'The requested resource could not be found.'));
  }
  if (action === 'get' && prediction.pollErrors > 0) {
    prediction.pollErrors -= 1;
    return reply(500, replicateError(500, 'Internal Server Error', `Simulated poll error for prediction ${id}.`));
  }
  if (action === 'get' && prediction.byPolls) countPoll(prediction, prediction.byPolls);
  if (action === 'cancel' && !terminal(statusOf(prediction))) prediction.canceledAt = Date.now();
  await reply(200, renderPrediction(prediction, exchange.origin));
}

const listPageSize = 100;

/** Replicate's list: `{next, previous, results}`, newest first; the cursor is opaque (here, an offset). */
async function listPredictions(exchange: Exchange, predictions: Map<string, Prediction>, reply: Reply): Promise<void> {
  const cursor = exchange.url.searchParams.get('cursor');
  const offset = cursor === null ? 0 : Number(Buffer.from(cursor, 'base64url').toString());
  if (!Number.isSafeInteger(offset) || offset < 0) {
    return reply(400, replicateError(400, 'Invalid cursor', 'The cursor is not one this API gave.'));
  }
  const newestFirst = [...predictions.values()].reverse();
  const page = newestFirst.slice(offset, offset + listPageSize);
  const link = (at: number) =>
    `${exchange.origin}/v1/predictions?cursor=${Buffer.from(String(at)).toString('base64url')}`;
  await reply(200, {
    next: offset + listPageSize < newestFirst.length ? link(offset + listPageSize) : null,
    previous: offset > 0 ? link(Math.max(0, offset - listPageSize)) : null,
    results: page.map((prediction) => renderPrediction(prediction, exchange.origin)),
  });
}

/** How long a prediction run by polls would take by the clock: far longer than any test waits between polls. */
const pollRunMs = 60 * 60 * 1000;

/**
 * A poll of a prediction run by polls: its clock is set so that the clock-based rendering shows this poll's state
 * (`starting` at the first, `processing` with a proportional percentage, then ended at the last).
 */
function countPoll(prediction: Prediction, byPolls: { total: number; seen: number }): void {
  if (byPolls.seen >= byPolls.total || prediction.canceledAt !== undefined) return;
  byPolls.seen += 1;
  const now = Date.now();
  if (byPolls.seen === byPolls.total) {
    prediction.runMs = now - prediction.createdAt;
  } else if (byPolls.seen === 1) {
    prediction.createdAt = now;
  } else {
    const done = (byPolls.seen - 1) / (byPolls.total - 1);
    prediction.createdAt = now - pollRunMs / 5 - done * ((pollRunMs * 4) / 5);
  }
}

type PredictionStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';

function statusOf(prediction: Prediction, now = Date.now()): PredictionStatus {
  if (prediction.canceledAt !== undefined) return 'canceled';
  const elapsed = now - prediction.createdAt;
  if (elapsed >= prediction.runMs) return prediction.failure === undefined ? 'succeeded' : 'failed';
  return elapsed < prediction.runMs / 5 ? 'starting' : 'processing';
}

function terminal(status: PredictionStatus): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'canceled';
}

function renderPrediction(prediction: Prediction, origin: string): unknown {
  const now = Date.now();
  const status = statusOf(prediction, now);
  const startedAt = prediction.createdAt + prediction.runMs / 5;
  const completedAt =
    status === 'canceled' ? prediction.canceledAt! : Math.max(prediction.createdAt + prediction.runMs, startedAt);
  const progress = Math.min(100, Math.floor(((now - startedAt) / Math.max(1, completedAt - startedAt)) * 100));
  const logs =
    status === 'starting'
      ? ''
      : status === 'processing'
        ? `Generating...\n${Math.max(0, progress)}%|          | step\n`
        : `Generating...\n100%|##########| done\n`;
  const predictionUrl = `${origin}/v1/predictions/${prediction.id}`;
  return {
    id: prediction.id,
    model: prediction.model,
    version: prediction.version,
    input: prediction.input,
    logs,
    output: status === 'succeeded' ? `${origin}/replicate/files/${prediction.id}.${prediction.output.extension}` : null,
    data_removed: false,
    error: status === 'failed' ? prediction.failure : null,
    status,
    created_at: new Date(prediction.createdAt).toISOString(),
    ...(status === 'starting' ? {} : { started_at: new Date(startedAt).toISOString() }),
    ...(terminal(status) ? { completed_at: new Date(completedAt).toISOString() } : {}),
    urls: {
      get: predictionUrl,
      cancel: `${predictionUrl}/cancel`,
      web: `https://replicate.com/p/${prediction.id}`,
    },
    ...(status === 'succeeded' ? { metrics: { predict_time: (completedAt - startedAt) / 1000 } } : {}),
  };
}

/** `owner/name:version` names its model; a bare version hash does not (the simulator knows no version table). */
function modelOfVersion(version: string | undefined): string | undefined {
  if (version === undefined) return undefined;
  const match = /^([^/:]+\/[^/:]+)(?::[0-9a-f]+)?$/.exec(version);
  return match?.[1] ?? (/^[0-9a-f]{64}$/.test(version) ? 'replicate/unknown-model' : undefined);
}

function replicateError(status: number, title: string, detail: string): unknown {
  return { title, detail, status };
}

// ---------------------------------------------------------------- shared

function modelOf(route: string, body: unknown, params: string[], prediction: Prediction | undefined): string {
  if (route === 'get' || route === 'cancel') return prediction?.model ?? '';
  if (route === 'create') {
    if (params.length === 2) return `${params[0]}/${params[1]}`;
    const version = typeof body === 'object' && body !== null && 'version' in body ? body.version : undefined;
    return typeof version === 'string' ? (modelOfVersion(version) ?? '') : '';
  }
  if (body instanceof FormData) {
    const model = body.get('model');
    return typeof model === 'string' ? model : '';
  }
  if (typeof body !== 'object' || body === null) return '';
  const record = body as Record<string, unknown>;
  if (route === 'tts') return typeof record.model_id === 'string' ? record.model_id : 'eleven_multilingual_v2';
  if (route === 'sfx') return typeof record.model_id === 'string' ? record.model_id : 'eleven_text_to_sound_v2';
  return typeof record.model === 'string' ? record.model : '';
}

function authenticationError(
  protocol: Protocol,
  request: IncomingMessage,
): { message: string; code?: string } | undefined {
  if (protocol === 'elevenlabs') {
    if (headerValue(request.headers, 'xi-api-key') !== undefined) return undefined;
    return {
      message: 'Neither authorization header nor xi-api-key received, please provide one.',
      code: 'needs_authorization',
    };
  }
  const authorization = headerValue(request.headers, 'authorization') ?? '';
  if (protocol === 'replicate') {
    return /^(Bearer|Token)\s+\S/.test(authorization)
      ? undefined
      : { message: 'You did not pass a valid authentication token' };
  }
  return /^Bearer\s+\S/.test(authorization)
    ? undefined
    : {
        message:
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        code: 'invalid_api_key',
      };
}

function errorBody(protocol: Protocol, status: number, message: string, code?: string): unknown {
  if (protocol === 'elevenlabs') return { detail: { status: code ?? `http_${status}`, message } };
  if (protocol === 'replicate') {
    const title = status === 401 ? 'Unauthenticated' : status === 429 ? 'Request was throttled' : 'Error';
    return replicateError(status, title, message);
  }
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code: code ?? null } };
}

function invalid(exchange: Exchange, protocol: Protocol, error: z.ZodError): void {
  if (protocol === 'elevenlabs') {
    // FastAPI's validation error shape.
    const detail = error.issues.map((issue) => ({
      loc: ['body', ...issue.path.map(String)],
      msg: issue.message,
      type: 'value_error',
    }));
    return sendJson(exchange.response, 422, { detail });
  }
  if (protocol === 'replicate') {
    const detail = error.issues.map((issue) => `- ${issue.path.join('.')}: ${issue.message}`).join('\n');
    return sendJson(exchange.response, 422, replicateError(422, 'Input validation failed', detail));
  }
  const issue = error.issues[0];
  const message = `Invalid '${issue?.path.join('.') ?? 'body'}': ${issue?.message ?? 'invalid request'}.`;
  return sendJson(exchange.response, 400, errorBody(protocol, 400, message));
}

/** Sends audio, applying the cut fault (half the bytes, then the connection drops). */
async function sendBinary(
  exchange: Exchange,
  bytes: Buffer,
  contentType: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const { response, fault } = exchange;
  response.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length, ...headers });
  if (fault.cut_after_tokens !== undefined) {
    await new Promise<void>((resolve) => response.write(bytes.subarray(0, bytes.length >> 1), () => resolve()));
    response.destroy();
    return;
  }
  response.end(bytes);
}

/** About 2.5 words a second at speed 1, at least half a second. */
function spokenSeconds(text: string, speed: number): number {
  const words = text.trim().split(/\s+/).length;
  return simulatedMp3Seconds(Math.max(0.5, words / 2.5 / speed));
}

/** A JSON object, a multipart form as FormData, or undefined when neither parses. */
async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > maxBodyBytes) return undefined;
    chunks.push(buffer);
  }
  const bytes = Buffer.concat(chunks);
  const contentType = headerValue(request.headers, 'content-type') ?? '';
  if (contentType.startsWith('multipart/form-data')) {
    try {
      return await new Request('http://simulator/', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: bytes,
      }).formData();
    } catch {
      return undefined;
    }
  }
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** What the request log keeps of a form: its text fields, and each file's name, type and size. */
function formSummary(form: FormData): Record<string, unknown> {
  return Object.fromEntries(
    [...form.entries()].map(([name, value]) => [
      name,
      typeof value === 'string' ? value : { filename: value.name, type: value.type, size: value.size },
    ]),
  );
}

function flatHeaders(request: IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [
      name,
      Array.isArray(value) ? value.join(', ') : (value ?? ''),
    ]),
  );
}

function faultMessage(status: number): string {
  if (status === 429) return 'Rate limit reached (simulated fault).';
  if (status >= 500) return `The server had an error while processing your request (simulated fault ${status}).`;
  return `Simulated fault with status ${status}.`;
}

type PredictionKind = 'audio' | 'video' | 'image' | 'remove-bg' | 'upscale';

/** What a model makes, judged by its name as Replicate's catalogue names them. */
function predictionKind(model: string): PredictionKind {
  if (/background|rembg|remove-bg|matting/i.test(model)) return 'remove-bg';
  if (/esrgan|upscal|swinir/i.test(model)) return 'upscale';
  if (/flux|sdxl|diffusion|imagen|ideogram|recraft|image/i.test(model)) return 'image';
  return /music|audio|sound|song|speech|tts/i.test(model) ? 'audio' : 'video';
}

/** The bytes of a `data:<type>;base64,` URI (the simulator takes files inline only), or undefined. */
function dataUriBytes(value: unknown): Buffer | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^data:[\w.+-]+\/[\w.+-]+;base64,([A-Za-z0-9+/=]+)$/.exec(value);
  return match ? Buffer.from(match[1]!, 'base64') : undefined;
}

/** Flux's aspect ratios and the sizes it renders them at. */
const aspectSizes: Record<string, [number, number]> = { '1:1': [1024, 1024], '16:9': [1344, 768], '9:16': [768, 1344] };

/**
 * The output file: silence for audio, an MP4 skeleton for video, a PNG for images. Background removal makes every
 * pixel close to the top-left corner's colour transparent (a plain-background stand-in for a segmentation model);
 * upscaling resizes by `input.scale`.
 */
async function predictionOutput(
  kind: PredictionKind,
  prediction: Prediction,
  image: Buffer | undefined,
): Promise<Buffer> {
  const { input, output } = prediction;
  if (kind === 'audio') return simulatedMp3(output.seconds);
  if (kind === 'video') return simulatedVideo(output.seconds, String(input.prompt ?? ''));
  if (kind === 'image') {
    const [width, height] = aspectSizes[String(input.aspect_ratio ?? '1:1')] ?? aspectSizes['1:1']!;
    return simulatedPng(String(input.prompt), width, height);
  }
  const source = sharp(image!);
  if (kind === 'upscale') {
    const { width = 1, height = 1 } = await source.metadata();
    const scale = Math.min(10, Math.max(1, Number(input.scale ?? 4)));
    return source
      .resize(Math.round(width * scale), Math.round(height * scale))
      .png()
      .toBuffer();
  }
  const { data, info } = await source.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const [red, green, blue] = [data[0]!, data[1]!, data[2]!];
  for (let offset = 0; offset < data.length; offset += 4) {
    const distance =
      Math.abs(data[offset]! - red) + Math.abs(data[offset + 1]! - green) + Math.abs(data[offset + 2]! - blue);
    if (distance < 48) data[offset + 3] = 0;
  }
  return sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
    .png()
    .toBuffer();
}
