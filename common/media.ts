/**
 * Media jobs' workflow-safe shapes (no zod, no Node built-ins): the speech workflow's input and result, the workflow id
 * of a job. The API validates requests (api/gateway/routes/media/schema.ts) and the activities run them
 * (activities/media/media-activities.ts).
 */

/** `tts`: POST /api/v1/media/tts; `speech`: POST /v1/audio/speech (OpenAI-compatible). */
export type SpeechKind = 'tts' | 'speech';

/** One engine and the voice it speaks with, in fallback order. */
export interface EngineVoice {
  engine: string;
  voice: string;
  language?: string;
}

export interface SpeechJobInput {
  jobId: string;
  kind: SpeechKind;
  userId: string;
  text: string;
  /** The voice the caller asked for (as stored on the job). */
  voice: string;
  speed: number;
  /** The engines to try, in order (engines this deployment lacks are skipped). */
  engines: EngineVoice[];
  /** The price, held by the API before the start; charged when the file is stored. */
  credits: number;
  /** False for the operator: nothing was held, nothing is charged. */
  metered: boolean;
}

export interface SpeechJobResult {
  jobId: string;
  engine: string;
  fileName: string;
  durationSeconds?: number;
  credits: number;
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
