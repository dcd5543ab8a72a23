/**
 * The activities of synchronous media jobs (speech, images, background removal, upscaling, OCR, sound effects,
 * transcription). `runMediaJob` is a whole job in one step: the kind's engines with fallback (hosted first, local last
 * where one exists; activities/media/fallback.ts), the outputs stored as files, the job row (written `processing` by
 * the API when it accepted the job, so a caller whose connection dropped finds it in GET /api/v1/media/jobs) ended
 * `completed` and
 * the held credits charged, in that order, each step idempotent by the job id (a retried activity finds the row and
 * charges nothing twice). `failMediaJob` records a job that ended without a result and releases its hold. Statements
 * are plain SQL on the shared pool; the ledger keys are the workflow id and attempt 1, as the API reserved them.
 *
 * Engines know nothing of jobs: each kind's `perform` below maps the job's work to one engine call and its answer to
 * files and data. The agent service's media tools can call the same engines the same way.
 */
import { ApplicationFailure } from '@temporalio/common';
import { run, type Pool } from '../../db/pool.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import {
  mediaWorkflowId,
  requestOf,
  type MediaFailureDetails,
  type MediaJobInput,
  type MediaJobResult,
  type SyncJobWork,
} from '../../common/media.ts';
import {
  EngineError,
  type BackgroundRemovalEngine,
  type ImageEngine,
  type MediaFile,
  type MusicEngine,
  type OcrEngine,
  type SoundEffectEngine,
  type SpeechEngine,
  type TranscriptionEngine,
  type UpscaleEngine,
  type VideoEngine,
} from './engine.ts';
import { failingAsActivity } from '../failures.ts';
import { withFallback, type EngineBreaker } from './fallback.ts';
import { mediaContentType, type MediaFiles } from './files.ts';

/** Every engine this deployment has, per capability, by id: hosted ones with keys, then the local ones. */
export interface MediaEngines {
  speech: ReadonlyMap<string, SpeechEngine>;
  images: ReadonlyMap<string, ImageEngine>;
  backgroundRemoval: ReadonlyMap<string, BackgroundRemovalEngine>;
  upscale: ReadonlyMap<string, UpscaleEngine>;
  ocr: ReadonlyMap<string, OcrEngine>;
  soundEffects: ReadonlyMap<string, SoundEffectEngine>;
  transcription: ReadonlyMap<string, TranscriptionEngine>;
  /** Replicate with a token. */
  video: ReadonlyMap<string, VideoEngine>;
  music: ReadonlyMap<string, MusicEngine>;
}

export interface MediaServices extends MediaEngines {
  files: MediaFiles;
  breaker: EngineBreaker;
  /** The wait between two polls of a provider's job (MEDIA_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
  /** How many times a job's callback is tried (MEDIA_CALLBACK_MAX_ATTEMPTS). */
  callbackMaxAttempts: number;
}

export interface MediaActivityDependencies {
  pool: Pool;
  ledger: CreditLedger;
  media: MediaServices;
}

/**
 * A job's end: the row the API wrote as `processing` when it accepted the job, ended once (a retry finds it ended and
 * changes nothing); written whole when there is none (a job accepted before rows were written at acceptance).
 */
const endJob = {
  name: 'media-job-end',
  text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, error, created_at, updated_at,
                                 finished_at)
         values ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, coalesce($10::timestamptz, now()), now(), now())
         on conflict (id) do update set status = excluded.status, engine = excluded.engine, result = excluded.result,
                                        credits = excluded.credits, error = excluded.error, updated_at = now(),
                                        finished_at = now()
         where media_jobs.status = 'processing'`,
};

const selectJob = {
  name: 'media-job-select',
  text: `select status, engine, result, credits from media_jobs where id = $1`,
};

/** What a kind's engine made: files to store and data to answer. */
interface Performed {
  outputs: Array<MediaFile>;
  data: Record<string, unknown>;
  /** When the serving engine costs less than the price held. */
  credits?: number;
}

/** The row's result column. `fileName` (the first file) is what result URLs and the expiry sweep read. */
interface StoredResult {
  fileName?: string;
  files: string[];
  data: Record<string, unknown>;
}

export function createMediaActivities({ pool, ledger, media }: MediaActivityDependencies) {
  const charge = async (input: MediaJobInput, engine: string, credits: number) => {
    if (!input.metered) return;
    await ledger.settle({
      userId: input.userId,
      workflowId: mediaWorkflowId(input.work.kind, input.jobId),
      attempt: 1,
      amount: credits,
      model: `media:${engine}`,
      promptTokens: 0,
      completionTokens: 0,
      estimated: false,
    });
  };

  const readInput = async (name: string): Promise<MediaFile> => {
    const bytes = await media.files.read(name);
    const contentType = mediaContentType(name);
    if (!bytes || !contentType) {
      throw ApplicationFailure.nonRetryable(`the job's input file ${name} is gone`, 'MediaInputMissing');
    }
    return { bytes, contentType };
  };

  /** The engines of `entries` this deployment has, in order, each with its entry. */
  const pick = <Engine, Entry>(
    engines: ReadonlyMap<string, Engine>,
    entries: readonly Entry[],
    idOf: (entry: Entry) => string,
  ) =>
    entries.flatMap((entry) => {
      const engine = engines.get(idOf(entry));
      return engine === undefined ? [] : [{ id: idOf(entry), engine, entry }];
    });
  const byId = (id: string) => id;

  async function perform(work: SyncJobWork): Promise<{ served: Performed; engine: string }> {
    const { breaker } = media;
    switch (work.kind) {
      case 'tts':
      case 'speech': {
        const choices = pick(media.speech, work.engines, (entry) => entry.engine);
        const { result, engine } = await withFallback(
          choices,
          ({ engine, entry }) =>
            engine.speak({ text: work.text, voice: entry.voice, speed: work.speed, language: entry.language }),
          breaker,
        );
        const data = result.durationSeconds === undefined ? {} : { durationSeconds: result.durationSeconds };
        return { served: { outputs: [result], data }, engine };
      }
      case 'image': {
        const choices = pick(media.images, work.engines, (entry) => entry.engine);
        const { result, engine } = await withFallback(
          choices,
          ({ engine, entry }) =>
            engine.generate({ prompt: work.prompt, model: entry.model, size: work.size, quality: work.quality }),
          breaker,
        );
        return { served: { outputs: result, data: { model: work.model } }, engine };
      }
      case 'remove-bg': {
        const image = await readInput(work.inputFile);
        const { result, engine } = await withFallback(
          pick(media.backgroundRemoval, work.engines, byId),
          ({ engine }) => engine.removeBackground(image, { quality: work.quality }),
          breaker,
        );
        return { served: { outputs: [result], data: {} }, engine };
      }
      case 'upscale': {
        const image = await readInput(work.inputFile);
        const { result, engine } = await withFallback(
          pick(media.upscale, work.engines, byId),
          ({ engine }) => engine.upscale(image, { scale: work.scale, model: work.model }),
          breaker,
        );
        const data = { originalSize: result.originalSize, upscaledSize: result.upscaledSize };
        return { served: { outputs: [result], data }, engine };
      }
      case 'ocr': {
        const image = await readInput(work.inputFile);
        const { result, engine } = await withFallback(
          pick(media.ocr, work.engines, (entry) => entry.engine),
          async ({ engine, entry }) => ({
            read: await engine.recognize(image, { language: entry.language }),
            credits: entry.credits,
          }),
          breaker,
        );
        const { text, confidence, words } = result.read;
        const data = { text, confidence, ...(work.format === 'json' && words ? { words } : {}) };
        return { served: { outputs: [], data, credits: result.credits }, engine };
      }
      case 'sfx': {
        const { result, engine } = await withFallback(
          pick(media.soundEffects, work.engines, byId),
          ({ engine }) => engine.soundEffect({ prompt: work.prompt, durationSeconds: work.durationSeconds }),
          breaker,
        );
        return { served: { outputs: [result], data: { durationSeconds: result.durationSeconds } }, engine };
      }
      case 'stt': {
        const audio = await readInput(work.inputFile);
        const { result, engine } = await withFallback(
          pick(media.transcription, work.engines, byId),
          ({ engine }) => engine.transcribe(audio, work.language === undefined ? {} : { language: work.language }),
          breaker,
        );
        return { served: { outputs: [], data: { ...result } }, engine };
      }
    }
  }

  /** One media job: its engines with fallback, its files, its row and its charge (a retry finds a written row). */
  async function runJob(input: MediaJobInput): Promise<MediaJobResult> {
    const kind = input.work.kind;
    type Row = { status: string; engine: string; result: StoredResult; credits: number };
    const [done] = await run<Row>(pool, selectJob, [input.jobId]);
    if (done?.status === 'completed') {
      // A retry after the row was written: the files exist; finish the charge the earlier run may have missed.
      await charge(input, done.engine, done.credits);
      const { files, data } = done.result;
      return { jobId: input.jobId, kind, engine: done.engine, credits: done.credits, files, data };
    }
    let performed;
    try {
      performed = await perform(input.work);
    } catch (error) {
      if (!(error instanceof EngineError)) throw error;
      const details: MediaFailureDetails = { retryable: error.retryable };
      throw ApplicationFailure.create({
        type: 'MediaEngineError',
        message: error.message,
        nonRetryable: true,
        details: [details],
      });
    }
    const { served, engine } = performed;
    const files: string[] = [];
    for (const output of served.outputs) files.push(await media.files.save(output.bytes, output.contentType));
    const credits = Math.min(input.credits, served.credits ?? input.credits);
    const stored: StoredResult = { ...(files[0] ? { fileName: files[0] } : {}), files, data: served.data };
    await run(pool, endJob, [
      input.jobId,
      kind,
      input.userId,
      'completed',
      engine,
      JSON.stringify(requestOf(input.work)),
      JSON.stringify(stored),
      credits,
      null,
      input.acceptedAt ?? null,
    ]);
    await charge(input, engine, credits);
    return { jobId: input.jobId, kind, engine, credits, files, data: served.data };
  }

  return {
    runMediaJob(input: MediaJobInput): Promise<MediaJobResult> {
      return failingAsActivity(() => runJob(input));
    },

    /** Records a job that produced nothing and releases its hold (both once). */
    async failMediaJob(input: MediaJobInput & { error: string }): Promise<void> {
      await run(pool, endJob, [
        input.jobId,
        input.work.kind,
        input.userId,
        'failed',
        null,
        JSON.stringify(requestOf(input.work)),
        null,
        0,
        input.error,
        input.acceptedAt ?? null,
      ]);
      if (input.metered) {
        await ledger.release({
          userId: input.userId,
          workflowId: mediaWorkflowId(input.work.kind, input.jobId),
          attempt: 1,
        });
      }
    },
  };
}

export type MediaActivities = ReturnType<typeof createMediaActivities>;
