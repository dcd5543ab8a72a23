/**
 * One line of a batch, run: the batch workflow's local activity `runBatchLine` (workflows/batch.workflow.ts).
 *
 * A line goes the way a synchronous request to its endpoint goes: the same body schema, the same router (plan,
 * catalogue, breaker), the same failover loop (common/model-call-failover.ts; for embeddings
 * common/embedding-failover.ts through EmbeddingService), the same provider calls and ledger. Its credits are held,
 * settled or released under the line's own keys (`batch-<id>/<line>#<attempt>`, common/batches.ts) at the plan's
 * batch rate, and its answer is written once (BatchStore.record). Run again (its worker died, the workflow replayed),
 * a line already answered is not called again; one whose answer was not yet written is, and is charged once: its
 * ledger keys are the same.
 *
 * Differences from a synchronous request, both because nobody waits on a line: it does not count against the
 * account's hourly and daily request limits, and when every provider of its model is saturated (429, overloaded, or
 * circuit open) it is not failed but handed back to the workflow (`no-capacity`), which runs it again later.
 */
import { ApplicationFailure } from '@temporalio/common';
import { chatCompletionRequestSchema, type ChatCompletionRequest } from '../../common/chat.ts';
import { presentCompletion, type CompletionAnswerView } from '../../common/completion-presenter.ts';
import { messagesRequestSchema, type MessagesRequest } from '../../common/doors/messages/schema.ts';
import { presentMessage, toCompletionRequest as toMessagesCompletion } from '../../common/doors/messages/translate.ts';
import { anthropicError } from '../../common/doors/messages/errors.ts';
import { responseRequestSchema, type ResponseRequest } from '../../common/doors/responses/schema.ts';
import {
  echoed,
  presentResponse,
  storedItems,
  toCompletionRequest as toResponseCompletion,
} from '../../common/doors/responses/translate.ts';
import { finishedStatus, outputItems, responseUsage } from '../../common/responses.ts';
import type { Attempt } from '../../common/completion.ts';
import {
  batchLineLedgerId,
  batchLineRequestId,
  type BatchEndpoint,
  type BatchLineOutcome,
} from '../../common/batches.ts';
import { embeddingRequestSchema, presentEmbeddings } from '../../common/embedding-request.ts';
import { ApiError, errorStatus, type ErrorType } from '../../common/errors.ts';
import { allSaturated, callWithFailover } from '../../common/model-call-failover.ts';
import { batchConcurrency, type PlanName, type PlansFile } from '../../common/plans.ts';
import type { Pool } from '../../db/pool.ts';
import { createCompletionActivities } from '../completion-activities.ts';
import type { StreamJournal } from '../streaming/stream-journal.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import { EmbeddingError, type EmbeddingService } from '../embeddings/embedding-service.ts';
import type { ApiFileStore } from '../files/api-files.ts';
import type { ProviderCalls } from '../provider-calls.ts';
import type { Router, RoutingAccount } from '../routing/router.ts';
import type { BatchLineAnswer, BatchStore, LineCheck } from './batch-store.ts';

export interface BatchLineDependencies {
  batches: BatchStore;
  apiFiles: ApiFileStore;
  router: Router;
  calls: ProviderCalls;
  ledger: CreditLedger;
  /** For the model call's steps (a line never streams, so it never has a journal tail to write). */
  journal: StreamJournal;
  embeddings: EmbeddingService;
  plans: PlansFile;
  pool: Pool;
}

/** Every provider of a line's model was saturated or down to its reserve: the line runs again later. */
interface NoCapacity {
  noCapacity: true;
  /** How long the provider said to wait, when it said. */
  retryAfterSeconds?: number;
}

/** A failed line's answer: the platform's error body with its status, as the synchronous endpoint answers it. */
function errorAnswer(requestId: string, type: ErrorType, message: string, param?: string | null): BatchLineAnswer {
  return {
    statusCode: errorStatus[type],
    requestId,
    body: { error: { type, message, ...(param ? { param } : {}) } },
  };
}

type ChatEndpoint = '/v1/chat/completions' | '/v1/messages' | '/v1/responses';

type ParsedLine =
  | { endpoint: ChatEndpoint; request: ChatCompletionRequest; original: unknown }
  | {
      endpoint: '/v1/embeddings';
      request: ReturnType<typeof embeddingRequestSchema.parse> & { input: string | string[] };
    }
  | { fault: { message: string; param: string | null } };

const schemas = {
  '/v1/chat/completions': chatCompletionRequestSchema,
  '/v1/embeddings': embeddingRequestSchema,
  '/v1/messages': messagesRequestSchema,
  '/v1/responses': responseRequestSchema,
} as const;

const fault = (param: string, message: string) => ({ fault: { message: `body.${param}: ${message}`, param } });

/**
 * A line's body read as its endpoint reads a request's: the same schema and translation (a Message is a chat
 * completion inside, common/doors/messages/), and what a batch does not do: stream, or fetch an image by URL (a
 * Messages line sends its images as base64).
 */
function parseLine(endpoint: BatchEndpoint, body: unknown): ParsedLine {
  const parsed = schemas[endpoint].safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.join('.') ?? '';
    return { fault: { message: `${path ? `body.${path}: ` : 'body: '}${issue?.message}`, param: path || null } };
  }
  if (endpoint !== '/v1/embeddings' && (parsed.data as { stream?: boolean | null }).stream) {
    return fault('stream', 'a batch line is not streamed');
  }
  if (endpoint === '/v1/chat/completions') {
    return { endpoint, request: parsed.data as ChatCompletionRequest, original: parsed.data };
  }
  if (endpoint === '/v1/responses') {
    const response = parsed.data as ResponseRequest;
    // A batch line is a Response on its own: not stored, not continuing another, not in the background itself.
    if (response.previous_response_id)
      return fault('previous_response_id', 'a batch line does not continue a response');
    if (response.background) return fault('background', 'a batch line runs in its batch, not in the background');
    return {
      endpoint,
      request: toResponseCompletion(response, [], storedItems(response.input), false),
      original: response,
    };
  }
  if (endpoint === '/v1/messages') {
    const message = parsed.data as MessagesRequest;
    const byUrl = message.messages.some(
      (entry) =>
        typeof entry.content !== 'string' &&
        entry.content.some((block) => block.type === 'image' && block.source.type === 'url'),
    );
    if (byUrl) return fault('messages', 'a batch line sends its images as base64, not by URL');
    try {
      return { endpoint, request: toMessagesCompletion(message), original: message };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return { fault: { message: `body.${error.message}`, param: error.param ?? null } };
    }
  }
  const request = parsed.data as ReturnType<typeof embeddingRequestSchema.parse>;
  const texts = typeof request.input === 'string' ? [request.input] : request.input;
  if (texts.some((item) => typeof item !== 'string'))
    return fault('input', 'token arrays are not supported; send the text');
  return { endpoint, request: request as typeof request & { input: string | string[] } };
}

/** How a chat line's answer and failure look at its endpoint: a chat completion, Anthropic's Message, or a Response. */
interface ChatDoor {
  body(id: string, created: number, answer: CompletionAnswerView, original: unknown): unknown;
  error(requestId: string, type: ErrorType, message: string, param?: string | null): BatchLineAnswer;
}

const chatDoors: Record<ChatEndpoint, ChatDoor> = {
  '/v1/chat/completions': {
    body: (id, created, answer) => presentCompletion(`chatcmpl-${id}`, created, answer),
    error: errorAnswer,
  },
  '/v1/messages': {
    body: (id, _created, answer) => presentMessage(`msg_${id}`, answer),
    error: (requestId, type, message) => {
      const { status, body } = anthropicError({ type, message });
      return { statusCode: status, requestId, body };
    },
  },
  '/v1/responses': {
    body: (id, created, answer, original) => {
      const request = original as ResponseRequest;
      const responseId = `resp_${id}`;
      const status = finishedStatus(answer.finishReason, false);
      return presentResponse({
        id: responseId,
        status,
        background: false,
        model: request.model,
        servedModel: answer.model,
        previousResponseId: null,
        instructions: request.instructions ?? null,
        // Not kept: a batch line's Response lives in the batch's output file.
        request: { ...echoed(request), store: false },
        output: outputItems(responseId, answer.message, status === 'completed'),
        usage: responseUsage(answer.usage),
        error: null,
        incompleteDetails: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
        createdAt: new Date(created * 1000),
        completedAt: new Date(),
      });
    },
    error: errorAnswer,
  },
};

/** The check of each line as a batch is loaded: its url is the batch's endpoint, and its body a request to it. */
export const checkBatchLine: LineCheck = (endpoint, request) => {
  if (request.url !== endpoint) {
    return { message: `url ${request.url} is not the batch's endpoint ${endpoint}`, param: 'url' };
  }
  const parsed = parseLine(endpoint, request.body);
  return 'fault' in parsed ? parsed.fault : null;
};

export function createBatchLineActivities(dependencies: BatchLineDependencies) {
  const { batches, router, embeddings, plans, pool } = dependencies;
  const activities = createCompletionActivities(dependencies);
  // The same steps as a workflow's model call, called here (common/model-call-failover.ts).
  const steps = {
    call: activities.callProvider,
    settle: activities.settleCredits,
    release: activities.releaseCredits,
    journal: activities.journalEvents,
  };
  const creditFactor = plans.batches.credit_factor;
  const reserve = plans.batches.provider_reserve;

  const accountOf = async (userId: string): Promise<RoutingAccount & { concurrency: number }> => {
    const { rows } = await pool.query<{ plan: PlanName; custom_limits: { models?: string[] | 'all' } | null }>(
      'select plan, custom_limits from users where id = $1',
      [userId],
    );
    // No account row: the operator's key (user `operator`), whose batches run as the top plan's.
    const plan = rows[0]?.plan ?? 'business';
    return {
      plan,
      customModels: rows[0]?.custom_limits?.models,
      concurrency: batchConcurrency(plans, plan),
    };
  };

  const chatLine = async (
    batchId: string,
    line: number,
    { request, original }: Extract<ParsedLine, { endpoint: ChatEndpoint }>,
    caller: { userId: string; metered: boolean; account: RoutingAccount | null },
    door: ChatDoor,
  ): Promise<BatchLineAnswer | NoCapacity> => {
    const requestId = batchLineRequestId(batchId, line);
    const errorAnswer = door.error;
    const planned = await router.plan(request, caller.account);
    if (planned.kind === 'model_not_found') {
      return errorAnswer(requestId, 'model_not_found', `The model '${request.model}' does not exist`, 'model');
    }
    if (planned.kind === 'not_in_plan') {
      return errorAnswer(requestId, 'permission_denied', `The model '${planned.model}' is not in your plan`, 'model');
    }
    if (planned.kind === 'needs_vision') {
      return errorAnswer(requestId, 'invalid_request', `The model '${planned.model}' cannot read images`, 'model');
    }
    // Every provider of the model has its circuit open: capacity, not the request, is missing.
    if (planned.candidates.length === 0) return { noCapacity: true };
    const candidates = planned.candidates.map((candidate) =>
      candidate.creditRate === undefined
        ? candidate
        : { ...candidate, creditRate: candidate.creditRate * creditFactor },
    );
    const workflowId = batchLineLedgerId(batchId, line);
    const created = Math.floor(Date.now() / 1000);
    const attempts: Attempt[] = [];
    try {
      const served = await callWithFailover(
        { requestId, userId: caller.userId, created, request, candidates, metered: caller.metered },
        // Every attempt holds its own worst case (no API held the first): `heldAttempt` 0 is no attempt's number.
        // It leaves each provider the reserve of its limits kept for requests someone waits on.
        { metered: caller.metered, attempts, workflowId, extra: { workflowId, heldAttempt: 0, reserve } },
        steps,
      );
      const answer = { ...served, model: served.candidate.model };
      return {
        statusCode: 200,
        requestId,
        body: door.body(requestId, created, answer, original),
        usage: { inputTokens: served.usage.prompt_tokens, outputTokens: served.usage.completion_tokens },
      };
    } catch (error) {
      if (!(error instanceof ApplicationFailure) || !error.type || !(error.type in errorStatus)) throw error;
      if (allSaturated(attempts)) {
        // The wait a provider named (a 429's Retry-After, or the reset of the window its reserve is kept for).
        const details = error.details?.[0] as { retryAfterSeconds?: number } | undefined;
        return { noCapacity: true, retryAfterSeconds: details?.retryAfterSeconds };
      }
      return errorAnswer(requestId, error.type as ErrorType, error.message);
    }
  };

  const embeddingLine = async (
    batchId: string,
    line: number,
    request: Extract<ParsedLine, { endpoint: '/v1/embeddings' }>['request'],
    caller: { userId: string; metered: boolean; account: RoutingAccount | null },
  ): Promise<BatchLineAnswer | NoCapacity> => {
    const requestId = batchLineRequestId(batchId, line);
    try {
      const embedded = await embeddings.run(
        caller,
        {
          userId: caller.userId,
          model: request.model,
          texts: typeof request.input === 'string' ? [request.input] : request.input,
          dimensions: request.dimensions,
          fallbackModels: request.fallback_models,
          user: request.user,
        },
        (reservation) => (reservation ? dependencies.ledger.reserve(reservation) : Promise.resolve(null)),
        { requestId: `emb-${requestId}`, creditFactor },
      );
      return {
        statusCode: 200,
        requestId,
        body: presentEmbeddings(embedded, request.encoding_format),
        usage: { inputTokens: embedded.usage.prompt_tokens, outputTokens: 0 },
      };
    } catch (error) {
      if (!(error instanceof EmbeddingError)) throw error;
      // Every provider failed and the last one said when to come back (a 429's Retry-After): saturated.
      if (error.type === 'upstream_error' && error.retryAfterSeconds !== undefined) {
        return { noCapacity: true, retryAfterSeconds: error.retryAfterSeconds };
      }
      return errorAnswer(requestId, error.type, error.message, error.param);
    }
  };

  return {
    /** Takes the batch's lines from its input file (`validating` → `in_progress`); null when it failed validation. */
    async loadBatch(batchId: string): Promise<{ total: number; concurrency: number } | null> {
      const total = await batches.load(batchId, dependencies.apiFiles, checkBatchLine);
      if (total === null) return null;
      const { rows } = await pool.query<{ user_id: string }>('select user_id from batches where id = $1', [batchId]);
      return { total, concurrency: (await accountOf(rows[0]!.user_id)).concurrency };
    },

    /** Runs one line and writes its answer (see the file comment). */
    async runBatchLine(input: { batchId: string; line: number }): Promise<BatchLineOutcome> {
      const { batchId, line } = input;
      const row = await batches.line(batchId, line);
      if (row.statusCode !== null) return { outcome: 'recorded', ok: row.statusCode === 200 };
      // What the batch says now, read with the line: its workflow may hear of a cancel or its expiry later than this.
      if (row.batchStatus === 'cancelling' || row.batchStatus === 'cancelled') return { outcome: 'cancelled' };
      if (row.expired) return { outcome: 'expired' };
      const account = row.metered ? await accountOf(row.userId) : null;
      const caller = { userId: row.userId, metered: row.metered, account };
      const parsed = parseLine(row.endpoint, row.body);
      const answer =
        'fault' in parsed
          ? (row.endpoint === '/v1/embeddings' ? errorAnswer : chatDoors[row.endpoint].error)(
              batchLineRequestId(batchId, line),
              'invalid_request',
              parsed.fault.message,
              parsed.fault.param,
            )
          : parsed.endpoint === '/v1/embeddings'
            ? await embeddingLine(batchId, line, parsed.request, caller)
            : await chatLine(batchId, line, parsed, caller, chatDoors[parsed.endpoint]);
      if ('noCapacity' in answer) {
        // Counted among the batch's waiting lines (the capacity queue's gauges, the batch object), once.
        const model = typeof row.body.model === 'string' ? row.body.model : null;
        await batches.waiting(batchId, line, model);
        return answer.retryAfterSeconds === undefined
          ? { outcome: 'no-capacity' }
          : { outcome: 'no-capacity', retryAfterSeconds: answer.retryAfterSeconds };
      }
      await batches.record(batchId, line, answer);
      return { outcome: 'recorded', ok: answer.statusCode === 200 };
    },

    /** `finalizing`: every line is answered, the files are next. */
    async batchFinalizing(batchId: string): Promise<void> {
      await batches.finalizing(batchId);
    },

    /** Writes the output and error files and ends the batch (`completed`, `expired` or `cancelled`). */
    async finishBatch(input: { batchId: string; ending: 'completed' | 'expired' | 'cancelled' }): Promise<void> {
      await batches.finish(input.batchId, input.ending, dependencies.apiFiles);
    },
  };
}

export type BatchLineActivities = ReturnType<typeof createBatchLineActivities>;
