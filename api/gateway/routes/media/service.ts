/**
 * Speech jobs through the API: the price held (402 when short), the job's workflow started eagerly (its local
 * activity runs in this process), its result awaited and the stored MP3 opened for the response. A start that fails
 * releases the hold; a job that fails has released it in its workflow.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { CreditLedger } from '../../../../activities/credits/credit-ledger.ts';
import { mediaFilePath, type MediaFiles } from '../../../../activities/media/files.ts';
import { run, type Pool } from '../../../../db/pool.ts';
import {
  mediaWorkflowId,
  type SpeechJobInput,
  type SpeechJobResult,
  type VideoJobInput,
} from '../../../../common/media.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import { kindKey, modelKey, userKey } from '../../../../common/search-attributes.ts';
import type { mediaSpeech } from '../../../../workflows/media.workflow.ts';
import type { mediaVideo } from '../../../../workflows/media-video.workflow.ts';
import { ApiError } from '../../../errors.ts';
import type { Principal } from '../../../services/apikeys/service.ts';

export interface MediaServiceDependencies {
  client: Client;
  taskQueue: string;
  ledger: CreditLedger;
  files: MediaFiles;
  pool: Pool;
  /** The video engines this deployment has, in order of preference (the first makes the videos). */
  videoEngines: string[];
  pollIntervalMs: number;
}

export interface VideoOrder {
  prompt: string;
  duration: 5 | 10;
  mode: 'standard' | 'pro';
  credits: number;
}

/** A video job as the API shows it (gateway spec 2, "Video job"). */
export interface VideoJobView {
  video_id: string;
  status: string;
  duration: number;
  mode: string;
  engine: string | null;
  credits_used: number;
  created_at: string;
  completed_at?: string;
  url?: string;
  video_url?: string;
  error?: string;
}

const insertVideo = {
  name: 'media-video-insert',
  text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, error, created_at, updated_at)
         values ($1, 'video', $2, 'queued', $3, $4::jsonb, null, $5, null, now(), now())`,
};

const selectVideoView = {
  name: 'media-video-view',
  text: `select id, status, engine, request, result, credits, error, created_at, finished_at from media_jobs
         where id = $1 and user_id = $2 and kind = 'video'`,
};

export type SpeechOrder = Omit<SpeechJobInput, 'jobId' | 'userId' | 'metered'>;

export class MediaService {
  private readonly dependencies: MediaServiceDependencies;

  constructor(dependencies: MediaServiceDependencies) {
    this.dependencies = dependencies;
  }

  async speak(principal: Principal, order: SpeechOrder) {
    const { client, taskQueue, ledger, files } = this.dependencies;
    const jobId = randomBytes(18).toString('base64url');
    const workflowId = mediaWorkflowId(order.kind, jobId);
    const userId = principal.userId;
    const metered = !principal.operator;
    if (metered) {
      const held = await ledger.reserve({
        userId,
        workflowId,
        attempt: 1,
        amount: order.credits,
        model: `media-${order.kind}`,
      });
      if (!held.ok) {
        throw new ApiError(
          'insufficient_credits',
          `This speech costs ${order.credits} credits; ${held.available} are available`,
        );
      }
    }
    const input: SpeechJobInput = { ...order, jobId, userId, metered };
    let result: SpeechJobResult;
    try {
      const handle = await client.workflow.start<typeof mediaSpeech>('mediaSpeech', {
        workflowId,
        taskQueue,
        args: [input],
        requestEagerStart: true,
        typedSearchAttributes: [
          { key: kindKey, value: `media-${order.kind}` },
          { key: userKey, value: userId },
          { key: modelKey, value: order.engines[0]?.engine ?? 'none' },
        ],
        staticSummary: `Speech (${order.kind}): ${order.text.length} characters, voice ${order.voice}, for ${userId}`,
      });
      result = await handle.result().catch((error: unknown) => {
        throw toApiError(error);
      });
    } catch (error) {
      // Not started: nothing will release the hold but this. Started: the workflow released it (this is a no-op).
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    const file = await files.open(result.fileName);
    if (!file) throw new ApiError('internal_error', `The result file of speech job ${jobId} is missing`);
    return { ...result, file };
  }
}

/**
 * Video jobs: the price held (402 when short, nothing started), the row written `queued`, the `mediaVideo` workflow
 * started (not awaited: the caller polls GET /api/v1/media/video/{id}). A start that fails marks the row failed and
 * releases the hold.
 */
export class VideoJobs {
  private readonly dependencies: MediaServiceDependencies;

  constructor(dependencies: MediaServiceDependencies) {
    this.dependencies = dependencies;
  }

  async create(principal: Principal, order: VideoOrder): Promise<{ jobId: string }> {
    const { client, taskQueue, ledger, pool, videoEngines, pollIntervalMs } = this.dependencies;
    const engine = videoEngines[0];
    if (engine === undefined) {
      throw new ApiError(
        'service_unavailable',
        'No video engine is configured on this deployment (REPLICATE_API_TOKEN)',
      );
    }
    const jobId = randomBytes(18).toString('base64url');
    const workflowId = mediaWorkflowId('video', jobId);
    const userId = principal.userId;
    const metered = !principal.operator;
    if (metered) {
      const held = await ledger.reserve({
        userId,
        workflowId,
        attempt: 1,
        amount: order.credits,
        model: 'media-video',
      });
      if (!held.ok) {
        throw new ApiError(
          'insufficient_credits',
          `This video costs ${order.credits} credits; ${held.available} are available`,
        );
      }
    }
    const input: VideoJobInput = {
      jobId,
      userId,
      prompt: order.prompt,
      durationSeconds: order.duration,
      mode: order.mode,
      engine,
      credits: order.credits,
      metered,
      pollIntervalMs,
    };
    try {
      const request = { prompt: order.prompt, duration: order.duration, mode: order.mode };
      await run(pool, insertVideo, [jobId, userId, engine, JSON.stringify(request), order.credits]);
      await client.workflow.start<typeof mediaVideo>('mediaVideo', {
        workflowId,
        taskQueue,
        args: [input],
        typedSearchAttributes: [
          { key: kindKey, value: 'media-video' },
          { key: userKey, value: userId },
          { key: modelKey, value: engine },
        ],
        staticSummary: `Video: ${order.duration} s, ${order.mode}, for ${userId}`,
      });
    } catch (error) {
      // Not started: nothing else will end the row or release the hold.
      await run(
        pool,
        {
          name: 'media-video-unstarted',
          text: `update media_jobs set status = 'failed', error = $2,
        credits = 0, updated_at = now(), finished_at = now() where id = $1`,
        },
        [jobId, 'the job could not start'],
      );
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    return { jobId };
  }

  /** The caller's video job, or null (another user's job is as absent as a missing one). */
  async view(principal: Principal, jobId: string): Promise<VideoJobView | null> {
    type Row = {
      id: string;
      status: string;
      engine: string | null;
      request: { duration: number; mode: string };
      result: { fileName?: string } | null;
      credits: number;
      error: string | null;
      created_at: Date;
      finished_at: Date | null;
    };
    const [row] = await run<Row>(this.dependencies.pool, selectVideoView, [jobId, principal.userId]);
    if (!row) return null;
    const fileName = row.status === 'completed' ? row.result?.fileName : undefined;
    return {
      video_id: row.id,
      status: row.status,
      duration: row.request.duration,
      mode: row.request.mode,
      engine: row.engine,
      credits_used: row.credits,
      created_at: row.created_at.toISOString(),
      ...(row.finished_at && row.status === 'completed' ? { completed_at: row.finished_at.toISOString() } : {}),
      ...(fileName ? { url: mediaFilePath(fileName), video_url: mediaFilePath(fileName) } : {}),
      ...(row.status === 'failed' && row.error ? { error: row.error } : {}),
    };
  }
}

function toApiError(error: unknown): ApiError {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
      return new ApiError(cause.type as ErrorType, cause.message);
    }
    cause = cause.cause;
  }
  return new ApiError('internal_error', `Speech failed: ${error instanceof Error ? error.message : String(error)}`);
}
