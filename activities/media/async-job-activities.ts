/**
 * The activities of asynchronous media jobs, video and music (workflows/media-async.workflow.ts), each one short and
 * idempotent by the job id, so Temporal may retry any of them. The same four steps serve both kinds, registered under
 * each kind's names (`createVideoPrediction`, `createMusicPrediction`, …). The job's row (written by the API:
 * `queued` for a video, `processing` for music) carries every state move: `create…Prediction` starts the provider's
 * job once and marks the row `processing`: its id is stored on the row in `result.providerJobId` and reused by a
 * retry, and since an attempt can die (or lose the provider's answer) between the provider starting the job and the
 * id being stored, the moment of the first call is stored before it (`result.createAttemptedAt`): a retry that finds
 * it asks the engine for the jobs it made for this very request since then (`findCreated`) and adopts the oldest one
 * no other media job holds, creating anew only when there is none; `poll…Prediction` reads the provider's job (a
 * retryable EngineError is thrown as is, so the activity's retry policy survives failed polls); `store…Output`
 * downloads the output into a media file, marks the row `completed` and charges the held credits; `fail…Job` marks it
 * `failed` and releases the hold. An engine's non-retryable refusal ends the job (ApplicationFailure
 * `MediaEngineError`, non-retryable). A cancelled job (`DELETE`): `cancel…Prediction` cancels the provider's job,
 * `cancel…Job` marks the row `cancelled` and releases the hold. Each end is written only from `queued` or
 * `processing`, and the credits are settled or released only by the step that wrote it, so a job ends one way and is
 * charged or refunded once (the workflow orders the steps; the row is the last word). Callbacks:
 * activities/media/callbacks.ts.
 */
import { ApplicationFailure } from '@temporalio/common';
import { run, type Pool } from '../../db/pool.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import { mediaWorkflowId, type AsyncJobInput, type AsyncMediaKind, type JobPoll } from '../../common/media.ts';
import { EngineError, type MusicEngine, type VideoEngine } from './engine.ts';
import type { MediaFiles } from './files.ts';
import { keepAlive } from '../heartbeat.ts';
import { videoThumbnail } from './local/ffmpeg-thumbnail.ts';
import { downloadOutput, mediaUpstream } from './providers/http.ts';

export interface AsyncJobActivityDependencies {
  pool: Pool;
  ledger: CreditLedger;
  media: { video: ReadonlyMap<string, VideoEngine>; music: ReadonlyMap<string, MusicEngine>; files: MediaFiles };
}

type JobRow = {
  status: string;
  result: { providerJobId?: string; fileName?: string; createAttemptedAt?: string } | null;
};

const selectJob = {
  name: 'media-async-select',
  text: `select status, result from media_jobs where id = $1 and kind = $2`,
};

// The first attempt's moment is kept: a later retry looks for what any attempt may have started.
const markCreateAttempt = {
  name: 'media-async-create-attempt',
  text: `update media_jobs set result = coalesce(result, '{}'::jsonb) || jsonb_build_object('createAttemptedAt', now()),
                updated_at = now()
         where id = $1 and result->>'createAttemptedAt' is null`,
};

const selectClaimed = {
  name: 'media-async-claimed',
  text: `select result->>'providerJobId' as id from media_jobs where result->>'providerJobId' = any($1::text[])`,
};

/** How far before the first attempt (by this database's clock) the provider's own clock may put its job. */
const clockSlackMs = 60_000;

const markProcessing = {
  name: 'media-async-processing',
  text: `update media_jobs set status = 'processing', engine = $2,
                result = coalesce(result, '{}'::jsonb) || jsonb_build_object('providerJobId', $3::text), updated_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

const markCompleted = {
  name: 'media-async-completed',
  text: `update media_jobs set status = 'completed', result = coalesce(result, '{}'::jsonb) || $2::jsonb,
                updated_at = now(), finished_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

const markFailed = {
  name: 'media-async-failed',
  text: `update media_jobs set status = 'failed', error = $2, credits = 0, updated_at = now(), finished_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

const markCancelled = {
  name: 'media-async-cancelled',
  text: `update media_jobs set status = 'cancelled', credits = 0, updated_at = now(), finished_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

/** An engine's failure as the activity reports it: retryable ones are retried by Temporal, the others end the job. */
function engineFailure(error: unknown): unknown {
  if (!(error instanceof EngineError) || error.retryable) return error;
  return ApplicationFailure.create({
    type: 'MediaEngineError',
    message: error.message,
    nonRetryable: true,
    details: [{ retryable: false }],
  });
}

/** The job has ended (cancelled, say) while an activity of it was still due: nothing more to do. */
const jobEnded = (status: string | undefined) =>
  ApplicationFailure.create({
    type: 'MediaJobEnded',
    message: `the job already ended (${status})`,
    nonRetryable: true,
  });

/** The output's expected content type family, by kind. */
const expectedOutput: Record<AsyncMediaKind, string> = { video: 'video/', music: 'audio/' };

function createAsyncJobSteps({ pool, ledger, media }: AsyncJobActivityDependencies, kind: AsyncMediaKind) {
  const engineIn = <Engine>(engines: ReadonlyMap<string, Engine>, input: AsyncJobInput): Engine => {
    const engine = engines.get(input.engine);
    if (!engine) {
      throw ApplicationFailure.create({
        type: 'MediaEngineError',
        message: `the ${kind} engine ${input.engine} is not configured`,
        nonRetryable: true,
      });
    }
    return engine;
  };
  const engineOf = (input: AsyncJobInput) =>
    engineIn<VideoEngine | MusicEngine>(kind === 'video' ? media.video : media.music, input);
  const videoRequest = (input: AsyncJobInput) => ({
    prompt: input.prompt,
    durationSeconds: input.durationSeconds,
    mode: input.mode ?? 'standard',
  });
  const musicRequest = (input: AsyncJobInput) => ({
    prompt: input.prompt,
    durationSeconds: input.durationSeconds,
    type: input.type ?? 'music',
  });
  const startProviderJob = (input: AsyncJobInput) =>
    kind === 'video'
      ? engineIn(media.video, input).create(videoRequest(input))
      : engineIn(media.music, input).create(musicRequest(input));
  /** The provider's job an earlier attempt started for this media job, if it can be found and no other job has it. */
  const findStartedJob = async (input: AsyncJobInput, attemptedAt: string): Promise<string | undefined> => {
    const since = new Date(Date.parse(attemptedAt) - clockSlackMs);
    const candidates =
      (kind === 'video'
        ? await engineIn(media.video, input).findCreated?.(videoRequest(input), since)
        : await engineIn(media.music, input).findCreated?.(musicRequest(input), since)) ?? [];
    if (candidates.length === 0) return undefined;
    const claimed = new Set((await run<{ id: string }>(pool, selectClaimed, [candidates])).map((row) => row.id));
    return candidates.find((candidate) => !claimed.has(candidate));
  };
  const ledgerKey = (input: AsyncJobInput) => ({
    userId: input.userId,
    workflowId: mediaWorkflowId(kind, input.jobId),
    attempt: 1,
  });

  return {
    /** Starts the provider's job (once per media job) and marks the row `processing`; answers the provider's job id. */
    async create(input: AsyncJobInput): Promise<string> {
      return keepAlive(async () => {
        const [row] = await run<JobRow>(pool, selectJob, [input.jobId, kind]);
        if (row?.status === 'cancelled') throw jobEnded(row.status);
        let providerJobId = row?.result?.providerJobId;
        const attemptedAt = row?.result?.createAttemptedAt;
        try {
          if (providerJobId === undefined && attemptedAt !== undefined) {
            providerJobId = await findStartedJob(input, attemptedAt);
          }
          if (providerJobId === undefined) {
            await run(pool, markCreateAttempt, [input.jobId]);
            ({ providerJobId } = await startProviderJob(input));
          }
        } catch (error) {
          throw engineFailure(error);
        }
        const { rowCount } = await pool.query({
          ...markProcessing,
          values: [input.jobId, input.engine, providerJobId],
        });
        if (rowCount === 0) {
          // Cancelled while this call ran (the workflow stopped waiting for it): the provider's job it just started
          // would run unwatched, so it is cancelled here.
          await engineOf(input)
            .cancel(providerJobId)
            .catch(() => undefined);
          throw jobEnded('cancelled');
        }
        return providerJobId;
      });
    },

    /** One read of the provider's job. An output given as bytes is stored here (history keeps only its name). */
    async poll(input: AsyncJobInput, providerJobId: string): Promise<JobPoll> {
      return keepAlive(async () => {
        let polled;
        try {
          polled = await engineOf(input).poll(providerJobId);
        } catch (error) {
          throw engineFailure(error);
        }
        if (polled.status !== 'succeeded') return polled;
        const [output] = polled.outputs;
        if (!output) return { status: 'failed', error: 'the provider finished without an output' };
        if ('url' in output) return { status: 'succeeded', output: { url: output.url } };
        return { status: 'succeeded', output: { fileName: await media.files.save(output.bytes, output.contentType) } };
      });
    },

    /** Stores the output as a media file, marks the row `completed` and charges the hold (each once). */
    async store(input: AsyncJobInput, output: { url: string } | { fileName: string }): Promise<string> {
      // A download (and its thumbnail) may take a while: heartbeats let a lost attempt be retried within seconds.
      return keepAlive(async () => {
        const [row] = await run<JobRow>(pool, selectJob, [input.jobId, kind]);
        let fileName = row?.status === 'completed' ? row.result?.fileName : undefined;
        if (fileName === undefined) {
          let bytes: Uint8Array | null = null;
          if ('fileName' in output) {
            fileName = output.fileName;
          } else {
            let file;
            try {
              file = await downloadOutput(mediaUpstream(input.engine, {}), output.url, expectedOutput[kind]);
            } catch (error) {
              throw engineFailure(error);
            }
            fileName = await media.files.save(file.bytes, file.contentType);
            bytes = file.bytes;
          }
          // A video's first frame is its thumbnail (none without ffmpeg: the job completes all the same).
          let thumbnailFileName: string | undefined;
          if (kind === 'video') {
            const thumbnail = await videoThumbnail(bytes ?? (await media.files.read(fileName)) ?? new Uint8Array());
            if (thumbnail) thumbnailFileName = await media.files.save(thumbnail.bytes, thumbnail.contentType);
          }
          const { rowCount } = await pool.query({
            ...markCompleted,
            values: [input.jobId, JSON.stringify({ fileName, ...(thumbnailFileName ? { thumbnailFileName } : {}) })],
          });
          if (rowCount === 0) {
            // Ended another way first (never by this workflow's own order of steps): nothing to charge.
            throw jobEnded(row?.status);
          }
        }
        if (input.metered) {
          await ledger.settle({
            ...ledgerKey(input),
            amount: input.credits,
            model: `media:${input.engine}`,
            promptTokens: 0,
            completionTokens: 0,
            estimated: false,
          });
        }
        return fileName;
      });
    },

    /** Records a job that ended without an output and releases its hold (both once). */
    async fail(input: AsyncJobInput, error: string): Promise<void> {
      await run(pool, markFailed, [input.jobId, error]);
      if (input.metered) await ledger.release(ledgerKey(input));
    },

    /** Cancels the provider's job (a job already ended there answers as it is: nothing to undo). */
    async cancelPrediction(input: AsyncJobInput, providerJobId: string): Promise<void> {
      try {
        await engineOf(input).cancel(providerJobId);
      } catch (error) {
        throw engineFailure(error);
      }
    },

    /** Records a cancelled job and releases its hold (both once). */
    async cancelJob(input: AsyncJobInput): Promise<void> {
      await run(pool, markCancelled, [input.jobId]);
      if (input.metered) await ledger.release(ledgerKey(input));
    },
  };
}

export function createAsyncJobActivities(dependencies: AsyncJobActivityDependencies) {
  const video = createAsyncJobSteps(dependencies, 'video');
  const music = createAsyncJobSteps(dependencies, 'music');
  return {
    createVideoPrediction: video.create,
    pollVideoPrediction: video.poll,
    storeVideoOutput: video.store,
    failVideoJob: video.fail,
    cancelVideoPrediction: video.cancelPrediction,
    cancelVideoJob: video.cancelJob,
    createMusicPrediction: music.create,
    pollMusicPrediction: music.poll,
    storeMusicOutput: music.store,
    failMusicJob: music.fail,
    cancelMusicPrediction: music.cancelPrediction,
    cancelMusicJob: music.cancelJob,
  };
}

export type AsyncJobActivities = ReturnType<typeof createAsyncJobActivities>;
