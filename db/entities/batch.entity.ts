import { defineEntity, p } from '@mikro-orm/core';

/**
 * A batch of the gateway's Batch API (`/v1/batches`, OpenAI's): the requests of one input file (db/entities/api-file.entity.ts)
 * run by one `batchRun` workflow (workflows/batch.workflow.ts). `status` follows OpenAI's (`validating`, `failed`,
 * `in_progress`, `finalizing`, `completed`, `expired`, `cancelling`, `cancelled`); the counts move as lines finish,
 * in the transaction that records each line (activities/batches/batch-store.ts). Owner-only.
 */
export const Batch = defineEntity({
  name: 'Batch',
  tableName: 'batches',
  properties: {
    id: p.string().primary(),
    userId: p.string(),
    endpoint: p.string(),
    inputFileId: p.string(),
    completionWindow: p.string(),
    status: p.string(),
    /** Lines are charged; false for the operator's key. */
    metered: p.boolean(),
    metadata: p.json().nullable(),
    /** Why validation failed: OpenAI's `errors.data` entries ({code, message, param, line}). */
    errors: p.json().nullable(),
    outputFileId: p.string().nullable(),
    errorFileId: p.string().nullable(),
    total: p.integer().default(0),
    completed: p.integer().default(0),
    failed: p.integer().default(0),
    /** The usage of the lines answered so far. */
    inputTokens: p.bigint('number').default(0),
    outputTokens: p.bigint('number').default(0),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    inProgressAt: p.datetime().nullable(),
    finalizingAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    expiredAt: p.datetime().nullable(),
    cancellingAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
    /**
     * Lines that found every provider of their model saturated (or down to its reserve) and wait in the workflow to
     * run again; since when, and the model the last of them asked for (the capacity queue's gauges read these).
     */
    linesWaiting: p.integer().default(0),
    waitingSince: p.datetime().nullable(),
    waitingModel: p.string().nullable(),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});

/**
 * One request of a batch (its input file's line `line`, from 1), and once run its answer: `statusCode` and `response`
 * (the endpoint's body, or its error body), written once (`where status_code is null`) with the batch's counts.
 */
export const BatchLine = defineEntity({
  name: 'BatchLine',
  tableName: 'batch_lines',
  properties: {
    batchId: p.string().primary(),
    line: p.integer().primary(),
    customId: p.text(),
    body: p.json(),
    statusCode: p.integer().nullable(),
    requestId: p.string().nullable(),
    response: p.json().nullable(),
    doneAt: p.datetime().nullable(),
    /** Set while the line waits for capacity (counted once in its batch's `linesWaiting`). */
    waitingSince: p.datetime().nullable(),
  },
});
