/**
 * Media jobs through the API. Synchronous ones (speech, images, background removal, upscaling, OCR, sound effects,
 * transcription; `MediaService.run`): the kind's engines checked against the deployment (503, nothing held, when it
 * has none), the price held (402 when short), the `mediaJob` workflow started eagerly (its local activity runs in this
 * process) and its result awaited. A start that fails releases the hold; a job that fails has released it in its
 * workflow. Asynchronous ones (video, music; `AsyncMediaJobs`) answer at once and are polled.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@temporalio/client';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { CreditLedger } from '../../../../activities/credits/credit-ledger.ts';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import { cancellableStatuses, jobColumns, type MediaJobRow } from '../../../../activities/media/job-view.ts';
import { assertPublicUrl } from '../../../../activities/net/checked-fetch.ts';
import { UrlRefusedError } from '../../../../activities/net/url-guard.ts';
import { run, type Pool } from '../../../../db/pool.ts';
import { mediaKinds } from '../../../../activities/media/local/index.ts';
import type { MediaEngines } from '../../../../activities/media/media-activities.ts';
import {
  mediaWorkflowId,
  requestOf,
  type AsyncJobInput,
  type AsyncMediaKind,
  type MediaJobInput,
  type MediaJobResult,
  type SyncJobWork,
  type SyncMediaKind,
} from '../../../../common/media.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import { kindKey, modelKey, userKey } from '../../../../common/search-attributes.ts';
import type { mediaJob } from '../../../../workflows/media.workflow.ts';
import { cancelMediaJobUpdate, type mediaMusic, type mediaVideo } from '../../../../workflows/media-async.workflow.ts';
import { ApiError } from '../../../errors.ts';
import { idempotencyOf, type Idempotency } from './idempotency.ts';
import type { Principal } from '../../../services/apikeys/service.ts';
import type { WorkerDependencies } from '../../../../worker/create-worker.ts';

export interface MediaServiceDependencies {
  client: Client;
  taskQueue: string;
  ledger: CreditLedger;
  files: MediaFiles;
  pool: Pool;
  pollIntervalMs: number;
  /** The engines this deployment has, per capability, in order of preference (a kind without any is unavailable: 503). */
  engines: MediaEngines;
  /** Attempts at a job's callback (MEDIA_CALLBACK_MAX_ATTEMPTS). */
  callbackMaxAttempts: number;
  /** Hosts a callback may reach although not public (FETCH_ALLOWED_HOSTS, as for web_fetch). */
  callbackAllowedHosts: string[];
}

/** The media service's dependencies from a process's (worker) dependencies: what both services' media routes use. */
export function mediaServiceDependencies(dependencies: {
  client: Client;
  taskQueue: string;
  ledger: CreditLedger;
  pool: Pool;
  media: WorkerDependencies['media'];
  toolSettings: { fetchAllowedHosts: string[] };
}): MediaServiceDependencies {
  return {
    client: dependencies.client,
    taskQueue: dependencies.taskQueue,
    ledger: dependencies.ledger,
    files: dependencies.media.files,
    pool: dependencies.pool,
    pollIntervalMs: dependencies.media.pollIntervalMs,
    engines: dependencies.media,
    callbackMaxAttempts: dependencies.media.callbackMaxAttempts,
    callbackAllowedHosts: dependencies.toolSettings.fetchAllowedHosts,
  };
}

/** The engine ids a job's work may use, in order. */
function engineIdsOf(work: SyncJobWork): string[] {
  return work.engines.map((entry: string | { engine: string }) => (typeof entry === 'string' ? entry : entry.engine));
}

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

/** A synchronous job as accepted: `processing` until its workflow ends it (activities/media/media-activities.ts). */
const insertAcceptedJob = {
  name: 'media-sync-accepted',
  text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, error, created_at, updated_at)
         values ($1, $2, $3, 'processing', null, $4::jsonb, null, $5, null, now(), now())
         on conflict (id) do nothing`,
};

/** A job whose workflow never started (synchronous or not): failed, unless something else ended it first. */
const failUnstarted = {
  name: 'media-job-unstarted',
  text: `update media_jobs set status = 'failed', error = $2, credits = 0, updated_at = now(), finished_at = now()
         where id = $1 and status in ('queued', 'processing')`,
};

/**
 * A new media job's id and workflow id, with its price held in the ledger (attempt 1 of the job's workflow) before
 * anything starts: 402 when the caller is short, and nothing held. The operator is not metered.
 */
async function holdJobCredits(
  ledger: MediaServiceDependencies['ledger'],
  principal: Principal,
  order: { kind: string; credits: number },
  idempotency?: Idempotency,
): Promise<{ jobId: string; workflowId: string; userId: string; metered: boolean }> {
  const jobId = idempotency?.jobId ?? randomBytes(18).toString('base64url');
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
        `This ${order.kind === 'tts' || order.kind === 'speech' ? 'speech' : `${order.kind} job`} costs ${order.credits} credits; ${held.available} are available`,
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

  /** Whether this deployment has an engine for the work (else the job is refused with 503 before anything). */
  assertAvailable(work: SyncJobWork): void {
    const capability = mediaKinds[work.kind];
    const engines = this.dependencies.engines[capability.engines];
    if (!engineIdsOf(work).some((id) => engines.has(id))) {
      throw new ApiError(
        'service_unavailable',
        `No engine for ${work.kind} is configured on this deployment (${capability.configure})`,
      );
    }
  }

  /**
   * The job an `Idempotency-Key` already stands for, run to its end (its result, or the error it failed with), or
   * undefined when the key is new. The same key with another request is a 409.
   */
  async previous(kind: SyncMediaKind, idempotency: Idempotency | undefined): Promise<MediaJobResult | undefined> {
    if (!idempotency) return undefined;
    const handle = this.dependencies.client.workflow.getHandle<typeof mediaJob>(
      mediaWorkflowId(kind, idempotency.jobId),
    );
    let memo: Record<string, unknown> | undefined;
    try {
      memo = (await handle.describe()).memo;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
    if (memo?.requestHash !== idempotency.requestHash) {
      throw new ApiError('conflict', 'This Idempotency-Key was already used with a different request', {
        param: 'Idempotency-Key',
      });
    }
    return handle.result().catch((error: unknown) => {
      throw toApiError(error);
    });
  }

  /**
   * A create with its optional `Idempotency-Key`: a repeat answers the job the key stands for; otherwise `prepare`
   * (which may store input files: only for new jobs) gives the work and its price, and the job runs.
   */
  async runOnce(
    principal: Principal,
    create: { kind: SyncMediaKind; idempotencyKey: string | undefined; request: unknown },
    prepare: () => Promise<{ work: SyncJobWork; credits: number }> | { work: SyncJobWork; credits: number },
  ): Promise<MediaJobResult> {
    const idempotency = idempotencyOf(create.idempotencyKey, principal.userId, create.kind, create.request);
    const previous = await this.previous(create.kind, idempotency);
    if (previous) return previous;
    const { work, credits } = await prepare();
    return this.run(principal, work, credits, idempotency);
  }

  /** Runs a synchronous job to its end: its result, or the ApiError its failure maps to. */
  async run(
    principal: Principal,
    work: SyncJobWork,
    credits: number,
    idempotency?: Idempotency,
  ): Promise<MediaJobResult> {
    const { client, taskQueue, ledger } = this.dependencies;
    this.assertAvailable(work);
    const order = { kind: work.kind, credits };
    const { jobId, workflowId, userId, metered } = await holdJobCredits(ledger, principal, order, idempotency);
    const input: MediaJobInput = { jobId, userId, credits, metered, work, acceptedAt: new Date().toISOString() };
    let handle;
    try {
      // Listed at once as `processing` (a keyed twin's row is the same job): the job ends it.
      await run(this.dependencies.pool, insertAcceptedJob, [
        jobId,
        work.kind,
        userId,
        JSON.stringify(requestOf(work)),
        credits,
      ]);
      handle = await client.workflow.start<typeof mediaJob>('mediaJob', {
        workflowId,
        taskQueue,
        args: [input],
        // A keyed job may meet its twin: it joins a running one, and a finished one is never run again. Eager start
        // takes neither policy, so only unkeyed jobs start eagerly.
        requestEagerStart: !idempotency,
        ...(idempotency
          ? {
              workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
              workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
              memo: { requestHash: idempotency.requestHash },
            }
          : {}),
        typedSearchAttributes: [
          { key: kindKey, value: `media-${work.kind}` },
          { key: userKey, value: userId },
          { key: modelKey, value: engineIdsOf(work)[0] ?? 'none' },
        ],
        staticSummary: `Media (${work.kind}) for ${userId}: ${summaryOf(work)}`,
      });
    } catch (error) {
      // A twin finished between the check and the start: its job is this one.
      if (idempotency && error instanceof WorkflowExecutionAlreadyStartedError) {
        return (await this.previous(work.kind, idempotency))!;
      }
      // Not started: nothing else will end the row or release the hold.
      await run(this.dependencies.pool, failUnstarted, [jobId, 'the job could not start']);
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    // Started: the workflow ends the row and settles or releases the hold, whatever happens to this request.
    return handle.result().catch((error: unknown) => {
      throw toApiError(error);
    });
  }

  /** A stored result file, opened for the response. */
  async openResult(result: MediaJobResult) {
    const name = result.files[0];
    const file = name === undefined ? null : await this.dependencies.files.open(name);
    if (!file) throw new ApiError('internal_error', `The result file of ${result.kind} job ${result.jobId} is missing`);
    return file;
  }
}

/** A line for the Temporal UI: what the job was asked, without the caller's content. */
function summaryOf(work: SyncJobWork): string {
  switch (work.kind) {
    case 'tts':
    case 'speech':
      return `${work.text.length} characters, voice ${work.voice}`;
    case 'image':
      return `${work.model}, ${work.size}, ${work.quality}`;
    case 'remove-bg':
      return `quality ${work.quality}`;
    case 'upscale':
      return `×${work.scale}, ${work.model}`;
    case 'ocr':
      return `language ${work.language}, ${work.format}`;
    case 'sfx':
      return `${work.durationSeconds} s`;
    case 'stt':
      return `language ${work.language ?? 'auto'}`;
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

  /**
   * Creates the job, or with an `Idempotency-Key` answers the job the key already stands for (its current status;
   * the same key with another request or callback is a 409). The key's job id makes its row the lock: a concurrent
   * twin's insert fails on the primary key and answers the twin's job.
   */
  async create(
    principal: Principal,
    order: AsyncOrder,
    idempotencyKey?: string,
  ): Promise<{ jobId: string; status: string }> {
    const { client, taskQueue, ledger, pool, pollIntervalMs } = this.dependencies;
    const request =
      order.kind === 'video'
        ? { prompt: order.prompt, duration: order.duration, mode: order.mode }
        : { prompt: order.prompt, duration: order.duration, type: order.type };
    const idempotency = idempotencyOf(idempotencyKey, principal.userId, order.kind, request);
    const keyed = idempotency && { jobId: idempotency.jobId, request, callbackUrl: order.callbackUrl ?? null };
    if (keyed) {
      const existing = await this.keyedJob(principal, order.kind, keyed);
      if (existing) return existing;
    }
    // The first engine of the kind serves the whole job (a provider's job cannot move to another provider).
    const [engine] = this.dependencies.engines[mediaKinds[order.kind].engines].keys();
    if (engine === undefined) {
      throw new ApiError(
        'service_unavailable',
        `No ${order.kind} engine is configured on this deployment (${mediaKinds[order.kind].configure})`,
      );
    }
    if (order.callbackUrl !== undefined) await this.checkCallbackUrl(order.callbackUrl);
    const { jobId, workflowId, userId, metered } = await holdJobCredits(ledger, principal, order, idempotency);
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
    } catch (error) {
      // A keyed twin inserted first: its job is this one (its hold is the one held: the same ledger key).
      if (keyed && (error as { code?: string }).code === '23505') {
        const twin = await this.keyedJob(principal, order.kind, keyed);
        if (twin) return twin;
      }
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    try {
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
    return { jobId, status };
  }

  /** The caller's job of a key, if it exists; 409 when it was created with another request or callback. */
  private async keyedJob(
    principal: Principal,
    kind: AsyncMediaKind,
    keyed: { jobId: string; request: Record<string, unknown>; callbackUrl: string | null },
  ): Promise<{ jobId: string; status: string } | undefined> {
    const row = await this.find(principal, kind, keyed.jobId);
    if (!row) return undefined;
    if (!isDeepStrictEqual(row.request, keyed.request) || row.callback_url !== keyed.callbackUrl) {
      throw new ApiError('conflict', 'This Idempotency-Key was already used with a different request', {
        param: 'Idempotency-Key',
      });
    }
    return { jobId: row.id, status: row.status };
  }

  /** The caller's job of that kind, or null (another user's job is as absent as a missing one). */
  async find(principal: Principal, kind: AsyncMediaKind, jobId: string): Promise<MediaJobRow | null> {
    const [row] = await run<MediaJobRow>(this.dependencies.pool, selectAsyncJob, [jobId, principal.userId, kind]);
    return row ? this.withExpiry(row) : null;
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
    const page = (more ? rows.slice(0, query.limit) : rows).map((row) => this.withExpiry(row));
    return { rows: page, nextCursor: more ? page.at(-1)!.id : null };
  }

  /**
   * The row with `expired: true` in its result when its output's file has expired: marked by the sweep, or due
   * already (the file was stored just before the job finished). The views then show no dead link.
   */
  private withExpiry(row: MediaJobRow): MediaJobRow {
    const due =
      row.status === 'completed' && row.finished_at !== null && this.dependencies.files.hasExpired(row.finished_at);
    if (!row.result?.fileName || row.result.expired === true || !due) return row;
    return { ...row, result: { ...row.result, expired: true } };
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
  return new ApiError('internal_error', `The job failed: ${error instanceof Error ? error.message : String(error)}`);
}
