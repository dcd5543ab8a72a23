/**
 * The Batch API (OpenAI's `/v1/batches`): `POST /v1/batches` (a batch of an input file's requests, run by one
 * `batchRun` workflow: workflows/batch.workflow.ts), `GET /v1/batches/{id}`, `GET /v1/batches` (`after`, `limit`) and
 * `POST /v1/batches/{id}/cancel`. Owner-only: another user's batch (or input file) is answered as one that does not
 * exist. The rows are BatchStore's (activities/batches/batch-store.ts); the output and error files are Files API
 * files (`purpose: batch_output`), read through `/v1/files/{id}/content`.
 */
import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import type { AuthState } from '../../../auth.ts';
import { ApiError, dependencyUnavailable, invalidRequest, isTemporalOutage } from '../../../errors.ts';
import { presentPage } from '../../../openapi/contract.ts';
import type { ApiFileStore } from '../../../../activities/files/api-files.ts';
import type { BatchRecord, BatchStore } from '../../../../activities/batches/batch-store.ts';
import { batchWorkflowId, type BatchRunInput } from '../../../../common/batches.ts';
import { batchConcurrency, type PlansFile } from '../../../../common/plans.ts';
import { kindKey, userKey } from '../../../../common/search-attributes.ts';
import type { batchRun } from '../../../../workflows/batch.workflow.ts';
import { cancelBatchSignal } from '../../../../workflows/batch.workflow.ts';
import { createBatchSchema, listQuerySchema } from './schema.ts';

export interface BatchRouteDependencies {
  batches: BatchStore;
  apiFiles: ApiFileStore;
  client: Client;
  taskQueue: string;
  plans: PlansFile;
  /** BATCH_WINDOW_SECONDS: how long a batch runs before it expires. */
  windowSeconds: number;
}

const unix = (date: Date | null) => (date ? Math.floor(date.getTime() / 1000) : null);

export function presentBatch(batch: BatchRecord) {
  return {
    id: batch.id,
    object: 'batch' as const,
    endpoint: batch.endpoint,
    errors: batch.errors ? { object: 'list' as const, data: batch.errors } : null,
    input_file_id: batch.inputFileId,
    completion_window: batch.completionWindow,
    status: batch.status,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    created_at: unix(batch.createdAt)!,
    in_progress_at: unix(batch.inProgressAt),
    expires_at: unix(batch.expiresAt),
    finalizing_at: unix(batch.finalizingAt),
    completed_at: unix(batch.completedAt),
    failed_at: unix(batch.failedAt),
    expired_at: unix(batch.expiredAt),
    cancelling_at: unix(batch.cancellingAt),
    cancelled_at: unix(batch.cancelledAt),
    request_counts: { total: batch.total, completed: batch.completed, failed: batch.failed },
    usage: {
      input_tokens: batch.inputTokens,
      output_tokens: batch.outputTokens,
      total_tokens: batch.inputTokens + batch.outputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
    metadata: batch.metadata,
    // Not OpenAI's: lines waiting for capacity (docs/capacity-queue.md), shown only while some wait.
    ...(batch.linesWaiting > 0
      ? { lines_waiting: { count: batch.linesWaiting, since: unix(batch.waitingSince), model: batch.waitingModel } }
      : {}),
  };
}

export function batchRoutes(dependencies: BatchRouteDependencies) {
  const { batches, apiFiles, client, taskQueue } = dependencies;
  const router = new Router<AuthState>();

  router.post('/v1/batches', async (context) => {
    const parsed = createBatchSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const { principal } = context.state;
    const input = await apiFiles.get(principal.userId, body.input_file_id);
    if (!input) throw new ApiError('not_found', `No file ${body.input_file_id}`, { param: 'input_file_id' });
    if (input.purpose !== 'batch') {
      throw new ApiError(
        'invalid_request',
        `The file ${input.id} is not a batch input (its purpose is ${input.purpose})`,
        {
          param: 'input_file_id',
        },
      );
    }
    const batch = await batches.create(principal.userId, {
      endpoint: body.endpoint,
      inputFileId: input.id,
      completionWindow: body.completion_window,
      metadata: body.metadata ?? null,
      metered: !principal.operator,
      windowSeconds: dependencies.windowSeconds,
    });
    const run: BatchRunInput = {
      batchId: batch.id,
      userId: principal.userId,
      endpoint: body.endpoint,
      expiresAt: batch.expiresAt.getTime(),
      concurrency: batchConcurrency(dependencies.plans, principal.plan),
    };
    try {
      await client.workflow.start<typeof batchRun>('batchRun', {
        workflowId: batchWorkflowId(batch.id),
        taskQueue,
        args: [run],
        typedSearchAttributes: [
          { key: kindKey, value: 'batch' },
          { key: userKey, value: principal.userId },
        ],
        staticSummary: `Batch of ${input.lineCount} request(s) to ${body.endpoint}, for ${principal.userId}`,
      });
    } catch (error) {
      // Not started: nothing of it runs, so nothing of it is kept.
      await batches.remove(batch.id);
      if (isTemporalOutage(error)) throw dependencyUnavailable('temporal');
      throw error;
    }
    context.body = presentBatch(batch);
  });

  router.get('/v1/batches', async (context) => {
    const query = listQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const { after, limit = 20 } = query.data;
    const listed = await batches.list(context.state.principal.userId, { after, limit });
    context.body = presentPage(listed.batches.map(presentBatch), listed.hasMore);
  });

  router.get('/v1/batches/:id', async (context) => {
    const batch = await batches.get(context.state.principal.userId, context.params.id!);
    if (!batch) throw new ApiError('not_found', `No batch ${context.params.id}`);
    context.body = presentBatch(batch);
  });

  router.post('/v1/batches/:id/cancel', async (context) => {
    const cancelled = await batches.cancel(context.state.principal.userId, context.params.id!);
    if (!cancelled) throw new ApiError('not_found', `No batch ${context.params.id}`);
    if (cancelled.changed) {
      // The fast way to the workflow; should it not arrive, the next line the batch starts reads `cancelling`.
      await client.workflow
        .getHandle(batchWorkflowId(cancelled.batch.id))
        .signal(cancelBatchSignal)
        .catch(() => undefined);
    }
    context.body = presentBatch(cancelled.batch);
  });

  return router;
}
