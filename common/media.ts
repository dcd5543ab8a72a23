/**
 * Media jobs' workflow-safe shapes (no zod, no Node built-ins): the speech workflow's input and result, the workflow id
 * of a job. The API validates requests (api/gateway/routes/media/schema.ts) and the activities run them
 * (activities/media/media-activities.ts).
 */

/** `tts`: POST /api/v1/media/tts; `speech`: POST /v1/audio/speech (OpenAI-compatible). */
export type SpeechKind = 'tts' | 'speech';

/** Media jobs answered in the request (workflow `mediaJob`, id `media-<kind>-<id>`). */
export type SyncMediaKind = SpeechKind | 'image' | 'remove-bg' | 'upscale' | 'ocr' | 'sfx' | 'stt';

/** One engine and the voice it speaks with, in fallback order. */
export interface EngineVoice {
  engine: string;
  voice: string;
  language?: string;
}

/**
 * What a synchronous job does, by kind, with the engines to try in order (engines this deployment lacks are
 * skipped). Input files (`inputFile`) are names in the media store, written by the API before the start, so no image
 * or audio travels through workflow history.
 */
export type SyncJobWork =
  | {
      kind: SpeechKind;
      text: string;
      /** The voice the caller asked for (as stored on the job). */
      voice: string;
      speed: number;
      engines: EngineVoice[];
    }
  | {
      kind: 'image';
      prompt: string;
      /** The public model id (`flux-schnell`, …). */
      model: string;
      size: string;
      quality: 'standard' | 'hd';
      /** Each engine with its own model id. */
      engines: Array<{ engine: string; model: string }>;
    }
  | { kind: 'remove-bg'; inputFile: string; quality: 'standard' | 'hd'; engines: string[] }
  | { kind: 'upscale'; inputFile: string; scale: 2 | 4; model: 'fast' | 'quality'; engines: string[] }
  | {
      kind: 'ocr';
      inputFile: string;
      /** The caller's `ja`, `en` or `premium`. */
      language: string;
      format: 'text' | 'json';
      /** Each engine with the language it reads and what it costs when it serves (premium falls back cheaper). */
      engines: Array<{ engine: string; language: string; credits: number }>;
    }
  | { kind: 'sfx'; prompt: string; durationSeconds: number; engines: string[] }
  | { kind: 'stt'; inputFile: string; language?: string; engines: string[] };

export interface MediaJobInput {
  jobId: string;
  userId: string;
  /** The price, held by the API before the start; charged when the result is stored. */
  credits: number;
  /** False for the operator: nothing was held, nothing is charged. */
  metered: boolean;
  work: SyncJobWork;
  /** When the API accepted the request (ISO 8601): the row's `created_at` (the row is written when the job ends). */
  acceptedAt?: string;
}

/** A synchronous job's request as its row stores it: the work without the engine list. */
export function requestOf(work: SyncJobWork): Record<string, unknown> {
  const { engines: _engines, ...request } = work;
  return request;
}

export interface MediaJobResult {
  jobId: string;
  kind: SyncMediaKind;
  engine: string;
  /** Charged: the price, or less when a cheaper engine served (OCR premium falling back to the standard engine). */
  credits: number;
  /** Result files in the media store, in order. */
  files: string[];
  /** What the kind answers besides files (sizes, text, confidence, duration, …), as stored on the job. */
  data: Record<string, unknown>;
}

/** What a failed media activity reports to the workflow (ApplicationFailure type `MediaEngineError`). */
export interface MediaFailureDetails {
  /** False when the engine refused the input (a 400 for the caller); true when engines failed (502). */
  retryable: boolean;
}

export const mediaWorkflowId = (kind: string, jobId: string) => `media-${kind}-${jobId}`;

/** Asynchronous media jobs: polled at the provider, run by `mediaVideo` / `mediaMusic` (`media-<kind>-<id>`). */
export type AsyncMediaKind = 'video' | 'music';

/** A video job (POST /api/v1/media/video) or a music job (POST /api/v1/media/music). */
export interface AsyncJobInput {
  jobId: string;
  kind: AsyncMediaKind;
  userId: string;
  prompt: string;
  /** Video: 5 or 10; music: 10, 30 or 60. */
  durationSeconds: number;
  /** Video only. */
  mode?: 'standard' | 'pro';
  /** Music only. */
  type?: 'music' | 'sfx';
  /** The engine that makes it (`replicate`). */
  engine: string;
  /** The price, held by the API before the start; charged when the output is stored, released when the job fails. */
  credits: number;
  /** False for the operator: nothing was held, nothing is charged. */
  metered: boolean;
  /** The wait between two polls of the provider (MEDIA_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
  /** Set when the job has a `callback_url` (stored on its row): attempts at most (MEDIA_CALLBACK_MAX_ATTEMPTS). */
  callback?: { maxAttempts: number };
}

/** How an asynchronous job ended (its workflow's result; a failed job fails its workflow). */
export type AsyncJobOutcome = { status: 'completed'; fileName: string } | { status: 'cancelled' };

/** The `cancelMediaJob` update's argument: who asks (only the job's owner may). */
export interface CancelJobRequest {
  by: string;
}

/** One poll of a provider's job: still running, done with an output (a URL to download or a stored file), failed. */
export type JobPoll =
  | { status: 'running'; progress?: number }
  | { status: 'succeeded'; output: { url: string } | { fileName: string } }
  | { status: 'failed'; error: string };
