/**
 * Speech jobs through the API: the price held (402 when short), the job's workflow started eagerly (its local
 * activity runs in this process), its result awaited and the stored MP3 opened for the response. A start that fails
 * releases the hold; a job that fails has released it in its workflow.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { CreditLedger } from '../../../../activities/credits/credit-ledger.ts';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import { cancellableStatuses, jobColumns, type MediaJobRow } from '../../../../activities/media/job-view.ts';
import { assertPublicUrl } from '../../../../activities/net/checked-fetch.ts';
import { UrlRefusedError } from '../../../../activities/net/url-guard.ts';
import { run, type Pool } from '../../../../db/pool.ts';
import {
  mediaWorkflowId,
  type SpeechJobInput,
  type SpeechJobResult,
  type AsyncJobInput,
  type AsyncMediaKind,
} from '../../../../common/media.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import { kindKey, modelKey, userKey } from '../../../../common/search-attributes.ts';
import type { mediaSpeech } from '../../../../workflows/media.workflow.ts';
import { cancelMediaJobUpdate, type mediaMusic, type mediaVideo } from '../../../../workflows/media-async.workflow.ts';
import { ApiError } from '../../../errors.ts';
import type { Principal } from '../../../services/apikeys/service.ts';

export interface MediaServiceDependencies {
  client: Client;
  taskQueue: string;
  ledger: CreditLedger;
  files: MediaFiles;
  pool: Pool;
  /** The video and music engines this deployment has, in order of preference (the first serves). */
  videoEngines: string[];
  musicEngines: string[];
  pollIntervalMs: number;
  /** Attempts at a job's callback (MEDIA_CALLBACK_MAX_ATTEMPTS). */
  callbackMaxAttempts: number;
  /** Hosts a callback may reach although not public (FETCH_ALLOWED_HOSTS, as for web_fetch). */
  callbackAllowedHosts: string[];
}

export type SpeechOrder = Omit<SpeechJobInput, 'jobId' | 'userId' | 'metered'>;

/** A validated order for an asynchronous job, priced. */
export type AsyncOrder = (
  | { kind: 'video'; prompt: string; duration: 5 | 10; mode: 'standard' | 'pro'; credits: number }
  | { kind: 'music'; prompt: string; duration: 10 | 30 | 60; type: 'music' | 'sfx'; credits: number }
) & { callbackUrl?: string };

const insertAsyncJob = {
  name: 'media-async-insert',
  text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, error, created_at, updated_at,
                           callback_url, callback_status)
         values ($1, $2, $3, $4, $5, $6::jsonb, null, $7, null, now(), now(), $8, case when $8::text is null then null
                 else 'pending' end)`,
};

const selectAsyncJob = {
  name: 'media-async-view',
  text: `select ${jobColumns} from media_jobs where id = $1 and user_id = $2 and kind = $3`,
};

const selectCursor = {
  name: 'media-jobs-cursor',
  text: `select 1 from media_jobs where id = $1 and user_id = $2`,
};

/**
 * A page of a user's jobs, newest first, strictly after the cursor job's (created_at, id); kind and status optional.
 * The cursor's time is compared in SQL: a JavaScript Date would round its microseconds away and skip its neighbours.
 */
const selectJobPage = {
  name: 'media-jobs-page',
  text: `select ${jobColumns} from media_jobs
         where user_id = $1 and ($2::text is null or kind = $2) and ($3::text is null or status = $3)
           and ($4::text is null or (created_at, id) < (select created_at, id from media_jobs where id = $4 and user_id = $1))
         order by created_at desc, id desc limit $5`,
};

const failUnstarted = {
  name: 'media-async-unstarted',
  text: `update media_jobs set status = 'failed', error = $2, credits = 0, updated_at = now(), finished_at = now()
         where id = $1`,
};

/**
 * A new media job's id and workflow id, with its price held in the ledger (attempt 1 of the job's workflow) before
 * anything starts: 402 when the caller is short, and nothing held. The operator is not metered.
 */
async function holdJobCredits(
  ledger: MediaServiceDependencies['ledger'],
  principal: Principal,
  order: { kind: string; credits: number },
): Promise<{ jobId: string; workflowId: string; userId: string; metered: boolean }> {
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
        `This ${order.kind === 'tts' || order.kind === 'speech' ? 'speech' : order.kind} costs ${order.credits} credits; ${held.available} are available`,
      );
    }
  }
  return { jobId, workflowId, userId, metered };
}

export class MediaService {
  private readonly dependencies: MediaServiceDependencies;

  constructor(dependencies: MediaServiceDependencies) {
    this.dependencies = dependencies;
  }

  async speak(principal: Principal, order: SpeechOrder) {
    const { client, taskQueue, ledger, files } = this.dependencies;
    const { jobId, workflowId, userId, metered } = await holdJobCredits(ledger, principal, order);
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
 * Video and music jobs: the price held (402 when short, nothing started), the row written (`queued` for a video,
 * `processing` for music), the `mediaVideo` / `mediaMusic` workflow started and not awaited: the caller polls
 * GET /api/v1/media/{video|music}/{id}. A start that fails marks the row failed and releases the hold.
 */
export class AsyncMediaJobs {
  private readonly dependencies: MediaServiceDependencies;

  constructor(dependencies: MediaServiceDependencies) {
    this.dependencies = dependencies;
  }

  async create(principal: Principal, order: AsyncOrder): Promise<{ jobId: string }> {
    const { client, taskQueue, ledger, pool, pollIntervalMs } = this.dependencies;
    const engine = (order.kind === 'video' ? this.dependencies.videoEngines : this.dependencies.musicEngines)[0];
    if (engine === undefined) {
      throw new ApiError(
        'service_unavailable',
        `No ${order.kind} engine is configured on this deployment (REPLICATE_API_TOKEN)`,
      );
    }
    if (order.callbackUrl !== undefined) await this.checkCallbackUrl(order.callbackUrl);
    const { jobId, workflowId, userId, metered } = await holdJobCredits(ledger, principal, order);
    const input: AsyncJobInput = {
      jobId,
      kind: order.kind,
      userId,
      prompt: order.prompt,
      durationSeconds: order.duration,
      ...(order.kind === 'video' ? { mode: order.mode } : { type: order.type }),
      engine,
      credits: order.credits,
      metered,
      pollIntervalMs,
      ...(order.callbackUrl !== undefined ? { callback: { maxAttempts: this.dependencies.callbackMaxAttempts } } : {}),
    };
    const request =
      order.kind === 'video'
        ? { prompt: order.prompt, duration: order.duration, mode: order.mode }
        : { prompt: order.prompt, duration: order.duration, type: order.type };
    const status = order.kind === 'video' ? 'queued' : 'processing';
    try {
      await run(pool, insertAsyncJob, [
        jobId,
        order.kind,
        userId,
        status,
        engine,
        JSON.stringify(request),
        order.credits,
        order.callbackUrl ?? null,
      ]);
      await client.workflow.start<typeof mediaVideo | typeof mediaMusic>(
        order.kind === 'video' ? 'mediaVideo' : 'mediaMusic',
        {
          workflowId,
          taskQueue,
          args: [input],
          typedSearchAttributes: [
            { key: kindKey, value: `media-${order.kind}` },
            { key: userKey, value: userId },
            { key: modelKey, value: engine },
          ],
          staticSummary: `${order.kind === 'video' ? 'Video' : 'Music'}: ${order.duration} s, for ${userId}`,
        },
      );
    } catch (error) {
      // Not started: nothing else will end the row or release the hold.
      await run(pool, failUnstarted, [jobId, 'the job could not start']);
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    return { jobId };
  }

  /** The caller's job of that kind, or null (another user's job is as absent as a missing one). */
  async find(principal: Principal, kind: AsyncMediaKind, jobId: string): Promise<MediaJobRow | null> {
    const [row] = await run<MediaJobRow>(this.dependencies.pool, selectAsyncJob, [jobId, principal.userId, kind]);
    return row ?? null;
  }

  /**
   * Cancels the caller's queued or processing job through its workflow's `cancelMediaJob` update, which answers
   * once the row says `cancelled` (provider's job cancelled, hold released); answers the row. 404 for a missing or
   * another user's job, 409 `conflict` for one that has ended, including one that ended while this was asked (the
   * workflow decides which end wins: workflows/media-async.workflow.ts).
   */
  async cancel(principal: Principal, kind: AsyncMediaKind, jobId: string): Promise<MediaJobRow> {
    const row = await this.find(principal, kind, jobId);
    if (!row) throw new ApiError('not_found', `No such ${kind} job`);
    if (!cancellableStatuses.includes(row.status)) {
      throw new ApiError(
        'conflict',
        `The ${kind} job has already ended (${row.status}); only a queued or processing job can be cancelled`,
      );
    }
    try {
      await this.dependencies.client.workflow
        .getHandle(mediaWorkflowId(kind, jobId))
        .executeUpdate(cancelMediaJobUpdate, { args: [{ by: principal.userId }] });
    } catch (error) {
      const refusal = cancelRefusal(error, kind);
      if (refusal) throw refusal;
      throw error;
    }
    return (await this.find(principal, kind, jobId))!;
  }

  /**
   * A page of the caller's jobs of every kind, newest first: `limit` rows after the cursor (the id of the last job of
   * the previous page, as `after` or `cursor`), and the next cursor when more remain.
   */
  async list(
    principal: Principal,
    query: { limit: number; cursor?: string; kind?: string; status?: string },
  ): Promise<{ rows: MediaJobRow[]; nextCursor: string | null }> {
    const { pool } = this.dependencies;
    if (query.cursor !== undefined) {
      const [known] = await run(pool, selectCursor, [query.cursor, principal.userId]);
      if (!known) {
        throw new ApiError('invalid_request', "cursor: no such job of yours (pass the previous page's next_cursor)", {
          param: 'cursor',
        });
      }
    }
    const rows = await run<MediaJobRow>(pool, selectJobPage, [
      principal.userId,
      query.kind ?? null,
      query.status ?? null,
      query.cursor ?? null,
      query.limit + 1,
    ]);
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return { rows: page, nextCursor: more ? page.at(-1)!.id : null };
  }

  /** A 400 naming `callback_url` for a URL the callback could never reach (the guard's address rules). */
  private async checkCallbackUrl(url: string): Promise<void> {
    try {
      await assertPublicUrl(url, this.dependencies.callbackAllowedHosts);
    } catch (error) {
      const reason =
        error instanceof UrlRefusedError
          ? error.message
          : `the host does not resolve (${(error as { code?: string }).code ?? 'lookup failed'})`;
      throw new ApiError('invalid_request', `callback_url: ${reason}`, { param: 'callback_url' });
    }
  }
}

/** Why a job's workflow refused a cancel, as the API's error (undefined: not a refusal, rethrow it). */
function cancelRefusal(error: unknown, kind: AsyncMediaKind): ApiError | undefined {
  // The workflow has closed since the row was read: the job has just ended.
  if (error instanceof WorkflowNotFoundError || (error as Error).message?.includes('completed')) {
    return new ApiError('conflict', `The ${kind} job has already ended`);
  }
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : error;
  if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
    return new ApiError(cause.type as ErrorType, cause.message);
  }
  return undefined;
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
