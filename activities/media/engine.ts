/**
 * Media engines (gateway spec 4.3 and 4.5): the adapters that make speech, images, transcriptions, OCR, upscales,
 * sound effects, music and video, behind one small interface per capability. Hosted providers (OpenAI, ElevenLabs,
 * Replicate) live in activities/media/providers/, local engines from npm packages in activities/media/local/. Engines
 * know nothing of Koa, Temporal or the database: the media job workflow (a later step) calls them from activities,
 * with the same fallback and breaker rules as model providers, and stores what they return.
 *
 * Every engine names itself (`id`, e.g. `openai`, `elevenlabs`, `replicate`, `espeak-ng`, `tesseract`, `sharp`) so a
 * response or job can say which engine served it. A failure is an `EngineError`: `retryable` failures (network,
 * timeout, 429, 5xx) let the caller fall over to the next engine; the others (a bad input the engine refused) do not.
 */

/** Binary output: bytes and their content type. */
export interface MediaFile {
  bytes: Uint8Array;
  contentType: string;
}

export interface EngineOptions {
  /** Aborted when the caller gives up (deadline, cancellation). */
  signal?: AbortSignal;
}

export interface SpeechRequest {
  text: string;
  /** The engine's own voice id (the API maps the spec's voices to engines and their voices). */
  voice: string;
  /** 0.25 to 4.0. */
  speed: number;
  /** BCP 47 language of the text, when known (`ja`, `en`). */
  language?: string;
}

export interface SpeechEngine {
  readonly id: string;
  /** MP3 audio. */
  speak(request: SpeechRequest, options?: EngineOptions): Promise<MediaFile & { durationSeconds?: number }>;
}

export interface TranscriptionEngine {
  readonly id: string;
  transcribe(
    audio: MediaFile,
    request: { language?: string },
    options?: EngineOptions,
  ): Promise<{ text: string; language?: string; durationSeconds?: number }>;
}

export interface ImageRequest {
  prompt: string;
  /** The engine's own model id. */
  model: string;
  /** `1024x1024`, `1792x1024` or `1024x1792`. */
  size: string;
  quality: 'standard' | 'hd';
}

export interface ImageEngine {
  readonly id: string;
  generate(request: ImageRequest, options?: EngineOptions): Promise<MediaFile[]>;
}

export interface OcrEngine {
  readonly id: string;
  /** `language`: the spec's `ja` or `en` (an engine may read more). Confidence 0..1. */
  recognize(
    image: MediaFile,
    request: { language: string },
    options?: EngineOptions,
  ): Promise<{ text: string; confidence: number; words?: Array<{ text: string; confidence: number }> }>;
}

export interface UpscaleEngine {
  readonly id: string;
  upscale(
    image: MediaFile,
    request: { scale: 2 | 4; model: 'fast' | 'quality' },
    options?: EngineOptions,
  ): Promise<MediaFile & { originalSize: string; upscaledSize: string }>;
}

export interface BackgroundRemovalEngine {
  readonly id: string;
  /** A PNG with the background made transparent. */
  removeBackground(
    image: MediaFile,
    request: { quality: 'standard' | 'hd' },
    options?: EngineOptions,
  ): Promise<MediaFile>;
}

export interface SoundEffectEngine {
  readonly id: string;
  /** MP3 of about `durationSeconds`. */
  soundEffect(
    request: { prompt: string; durationSeconds: number },
    options?: EngineOptions,
  ): Promise<MediaFile & { durationSeconds: number }>;
}

/**
 * A provider's asynchronous job (music, video): created, then polled until it ends. The workflow waits between polls
 * with durable timers, so each call here is short. `poll` of a job that is still running answers `running`.
 */
export interface AsyncJobEngine<Request> {
  readonly id: string;
  create(request: Request, options?: EngineOptions): Promise<{ providerJobId: string }>;
  poll(
    providerJobId: string,
    options?: EngineOptions,
  ): Promise<
    | { status: 'running'; progress?: number }
    | { status: 'succeeded'; outputs: MediaFile[] | Array<{ url: string; contentType?: string }> }
    | { status: 'failed'; error: string }
  >;
  cancel(providerJobId: string, options?: EngineOptions): Promise<void>;
  /**
   * The ids of the provider's jobs for exactly this request created since `since`, oldest first: how a retried
   * create finds the job an earlier attempt started but never recorded (its worker killed, or the answer lost on
   * the way back). Optional: an engine without it (or a provider that cannot list) makes a retry create anew.
   */
  findCreated?(request: Request, since: Date, options?: EngineOptions): Promise<string[]>;
}

export interface MusicRequest {
  prompt: string;
  type: 'music' | 'sfx';
  durationSeconds: number;
}

export interface VideoRequest {
  prompt: string;
  durationSeconds: number;
  mode: 'standard' | 'pro';
}

export type MusicEngine = AsyncJobEngine<MusicRequest>;
export type VideoEngine = AsyncJobEngine<VideoRequest>;

/** A failure of an engine; `retryable` ones let the caller try the next engine. */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly engine: string;
  readonly retryable: boolean;
  /** The provider's HTTP status, when there was one. */
  readonly status: number | undefined;

  constructor(engine: string, message: string, options: { retryable: boolean; status?: number; cause?: unknown }) {
    super(`${engine}: ${message}`, { cause: options.cause });
    this.engine = engine;
    this.retryable = options.retryable;
    this.status = options.status;
  }
}
