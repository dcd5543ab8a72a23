/**
 * The activities of media jobs. `synthesizeSpeech` is a whole speech job in one step: the engines with fallback
 * (hosted first, local espeak-ng last; activities/media/fallback.ts), the MP3 stored as a file, the job row written
 * `completed` and the held credits charged, in that order, each step idempotent by the job id (a retried activity
 * finds the row and charges nothing twice). `failMediaJob` records a job that ended without a result and releases
 * its hold. Statements are plain SQL on the shared pool; the ledger keys are the workflow id and attempt 1, as the
 * API reserved them.
 */
import { ApplicationFailure } from '@temporalio/common';
import { run, type Pool } from '../../db/pool.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import {
  mediaWorkflowId,
  type MediaFailureDetails,
  type SpeechJobInput,
  type SpeechJobResult,
} from '../../common/media.ts';
import { EngineError, type MusicEngine, type SpeechEngine, type VideoEngine } from './engine.ts';
import { withFallback, type EngineBreaker } from './fallback.ts';
import type { MediaFiles } from './files.ts';

export interface MediaServices {
  /** Every speech engine this deployment has, by id (hosted ones with keys, and espeak-ng). */
  speech: ReadonlyMap<string, SpeechEngine>;
  files: MediaFiles;
  breaker: EngineBreaker;
  /** Every video engine this deployment has, by id (Replicate with a token). */
  video: ReadonlyMap<string, VideoEngine>;
  /** Every music engine this deployment has, by id (Replicate with a token). */
  music: ReadonlyMap<string, MusicEngine>;
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

const insertJob = {
  name: 'media-job-insert',
  text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, error, created_at, updated_at,
                                 finished_at)
         values ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, now(), now(), now())
         on conflict (id) do nothing`,
};

const selectJob = {
  name: 'media-job-select',
  text: `select status, engine, result, credits from media_jobs where id = $1`,
};

export function createMediaActivities({ pool, ledger, media }: MediaActivityDependencies) {
  const request = (input: SpeechJobInput) => ({ text: input.text, voice: input.voice, speed: input.speed });
  const charge = async (input: SpeechJobInput, engine: string) => {
    if (!input.metered) return;
    await ledger.settle({
      userId: input.userId,
      workflowId: mediaWorkflowId(input.kind, input.jobId),
      attempt: 1,
      amount: input.credits,
      model: `media:${engine}`,
      promptTokens: 0,
      completionTokens: 0,
      estimated: false,
    });
  };

  return {
    async synthesizeSpeech(input: SpeechJobInput): Promise<SpeechJobResult> {
      type Row = { status: string; engine: string; result: { fileName: string; durationSeconds?: number } };
      const [done] = await run<Row>(pool, selectJob, [input.jobId]);
      if (done?.status === 'completed') {
        // A retry after the row was written: the file exists; finish the charge the earlier run may have missed.
        await charge(input, done.engine);
        return { jobId: input.jobId, engine: done.engine, credits: input.credits, ...done.result };
      }
      const voices = new Map(input.engines.map((entry) => [entry.engine, entry]));
      const engines = input.engines.flatMap((entry) => media.speech.get(entry.engine) ?? []);
      let served;
      try {
        served = await withFallback(
          engines,
          (engine) => {
            const choice = voices.get(engine.id)!;
            return engine.speak({
              text: input.text,
              voice: choice.voice,
              speed: input.speed,
              language: choice.language,
            });
          },
          media.breaker,
        );
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
      const { result, engine } = served;
      const fileName = await media.files.save(result.bytes, result.contentType);
      const stored = {
        fileName,
        ...(result.durationSeconds !== undefined ? { durationSeconds: result.durationSeconds } : {}),
      };
      await run(pool, insertJob, [
        input.jobId,
        input.kind,
        input.userId,
        'completed',
        engine,
        JSON.stringify(request(input)),
        JSON.stringify(stored),
        input.credits,
        null,
      ]);
      await charge(input, engine);
      return { jobId: input.jobId, engine, credits: input.credits, ...stored };
    },

    /** Records a speech job that produced nothing and releases its hold (both once). */
    async failSpeechJob(input: SpeechJobInput & { error: string }): Promise<void> {
      await run(pool, insertJob, [
        input.jobId,
        input.kind,
        input.userId,
        'failed',
        null,
        JSON.stringify(request(input)),
        null,
        0,
        input.error,
      ]);
      if (input.metered) {
        await ledger.release({
          userId: input.userId,
          workflowId: mediaWorkflowId(input.kind, input.jobId),
          attempt: 1,
        });
      }
    },
  };
}

export type MediaActivities = ReturnType<typeof createMediaActivities>;
