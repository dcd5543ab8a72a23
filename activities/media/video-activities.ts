/**
 * The activities of a video job (workflows/media-video.workflow.ts), each one short and idempotent by the job id, so
 * Temporal may retry any of them. The job's row (written `queued` by the API) carries every state move:
 * `createVideoPrediction` starts the provider's job once (its id is stored on the row in `result.providerJobId` and
 * reused by a retry) and marks the row `processing`; `pollVideoPrediction` reads the provider's job (a retryable
 * EngineError is thrown as is, so the activity's retry policy survives failed polls); `storeVideoOutput` downloads
 * the output into a media file, marks the row `completed` and charges the held credits; `failVideoJob` marks it
 * `failed` and releases the hold. An engine's non-retryable refusal ends the job (ApplicationFailure
 * `MediaEngineError`, non-retryable).
 */
import { ApplicationFailure } from '@temporalio/common';
import { run, type Pool } from '../../db/pool.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import { mediaWorkflowId, type VideoJobInput, type VideoPoll } from '../../common/media.ts';
import { EngineError, type VideoEngine } from './engine.ts';
import type { MediaFiles } from './files.ts';
import { downloadOutput, mediaUpstream } from './providers/http.ts';

export interface VideoActivityDependencies {
  pool: Pool;
  ledger: CreditLedger;
  media: { video: ReadonlyMap<string, VideoEngine>; files: MediaFiles };
}

type JobRow = { status: string; result: { providerJobId?: string; fileName?: string } | null };

const selectVideo = {
  name: 'media-video-select',
  text: `select status, result from media_jobs where id = $1 and kind = 'video'`,
};

const markProcessing = {
  name: 'media-video-processing',
  text: `update media_jobs set status = 'processing', engine = $2,
                result = coalesce(result, '{}'::jsonb) || jsonb_build_object('providerJobId', $3::text), updated_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

const markCompleted = {
  name: 'media-video-completed',
  text: `update media_jobs set status = 'completed', result = coalesce(result, '{}'::jsonb) || $2::jsonb,
                updated_at = now(), finished_at = now()
         where id = $1 and status <> 'completed'`,
};

const markFailed = {
  name: 'media-video-failed',
  text: `update media_jobs set status = 'failed', error = $2, credits = 0, updated_at = now(), finished_at = now()
         where id = $1 and status not in ('completed', 'failed')`,
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

export function createVideoActivities({ pool, ledger, media }: VideoActivityDependencies) {
  const engineOf = (input: VideoJobInput) => {
    const engine = media.video.get(input.engine);
    if (!engine) {
      throw ApplicationFailure.create({
        type: 'MediaEngineError',
        message: `the video engine ${input.engine} is not configured`,
        nonRetryable: true,
      });
    }
    return engine;
  };
  const ledgerKey = (input: VideoJobInput) => ({
    userId: input.userId,
    workflowId: mediaWorkflowId('video', input.jobId),
    attempt: 1,
  });

  return {
    /** Starts the provider's job (once per video job) and marks the row `processing`; answers the provider's job id. */
    async createVideoPrediction(input: VideoJobInput): Promise<string> {
      const [row] = await run<JobRow>(pool, selectVideo, [input.jobId]);
      let providerJobId = row?.result?.providerJobId;
      if (providerJobId === undefined) {
        try {
          ({ providerJobId } = await engineOf(input).create({
            prompt: input.prompt,
            durationSeconds: input.durationSeconds,
            mode: input.mode,
          }));
        } catch (error) {
          throw engineFailure(error);
        }
      }
      await run(pool, markProcessing, [input.jobId, input.engine, providerJobId]);
      return providerJobId;
    },

    /** One read of the provider's job. An output given as bytes is stored here (history keeps only its name). */
    async pollVideoPrediction(input: VideoJobInput, providerJobId: string): Promise<VideoPoll> {
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
    },

    /** Stores the output as a media file, marks the row `completed` and charges the hold (each once). */
    async storeVideoOutput(input: VideoJobInput, output: { url: string } | { fileName: string }): Promise<string> {
      const [row] = await run<JobRow>(pool, selectVideo, [input.jobId]);
      let fileName = row?.status === 'completed' ? row.result?.fileName : undefined;
      if (fileName === undefined) {
        if ('fileName' in output) {
          fileName = output.fileName;
        } else {
          let file;
          try {
            file = await downloadOutput(mediaUpstream(input.engine, {}), output.url, 'video/');
          } catch (error) {
            throw engineFailure(error);
          }
          fileName = await media.files.save(file.bytes, file.contentType);
        }
        await run(pool, markCompleted, [input.jobId, JSON.stringify({ fileName })]);
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
    },

    /** Records a video job that ended without a video and releases its hold (both once). */
    async failVideoJob(input: VideoJobInput, error: string): Promise<void> {
      await run(pool, markFailed, [input.jobId, error]);
      if (input.metered) await ledger.release(ledgerKey(input));
    },
  };
}

export type VideoActivities = ReturnType<typeof createVideoActivities>;
