/**
 * Chat completions as durable workflows. The API validates and plans, then starts `chatCompletion` with
 * eager start, so the workflow's only task runs in this process's worker; alongside the start it begins
 * attempt 1's provider call, which the workflow's local activity adopts. Answers and stream events reach the
 * waiting response through the in-process hub, and nothing is sent before the workflow exists. A workflow
 * that runs elsewhere (idempotent replay, eager start declined) is relayed from the stream journal and its
 * result instead.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdConflictPolicy } from '@temporalio/common';
import type { ChatCompletionRequest } from '../../../../common/chat.ts';
import type { ResponseRecord } from '../../../../common/responses.ts';
import {
  completionWorkflowId,
  type CompletionFailureDetails,
  type CompletionInput,
  type CompletionResult,
  type Attempt,
  type SequencedStreamEvent,
} from '../../../../common/completion.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import { kindKey, modelKey, userKey } from '../../../../common/search-attributes.ts';
import type { ProviderCalls } from '../../../../activities/provider-calls.ts';
import type { Router } from '../../../../activities/routing/router.ts';
import type {
  AdmittedWrite,
  CreditLedger,
  Reservation,
  ReservationOutcome,
} from '../../../../activities/credits/credit-ledger.ts';
import { worstCaseCredits } from '../../../../activities/credits/tokens.ts';
import type { Principal } from '../../../services/apikeys/service.ts';
import type { StreamHub, StreamSubscription } from '../../../../activities/streaming/stream-hub.ts';
import type { StreamJournal } from '../../../../activities/streaming/stream-journal.ts';
import type { chatCompletion } from '../../../../workflows/completion.workflow.ts';
import { ApiError, dependencyUnavailable, isTemporalOutage, visionRefusal } from '../../../errors.ts';
import type { StageMarks } from '../../../server-timing.ts';

export interface CompletionServiceDependencies {
  client: Client;
  taskQueue: string;
  router: Router;
  calls: ProviderCalls;
  ledger: CreditLedger;
  hub: StreamHub;
  journal: StreamJournal;
  /** How often a journal relay polls for new events. */
  journalPollMs?: number;
}

export interface StartedCompletion {
  requestId: string;
  created: number;
  handle: WorkflowHandle<typeof chatCompletion>;
  /** The workflow's first task runs in this process: its events arrive through `subscription`. */
  local: boolean;
  subscription: StreamSubscription | null;
  /** The workflow's outcome; asked for lazily, since the fast path answers without waiting for it. */
  result(): Promise<Settled>;
}

/** What a non-streamed response is made of. */
export type CompletionAnswer = Pick<CompletionResult, 'model' | 'finishReason' | 'usage'> & {
  message: CompletionResult['message'];
  /** The provider call's duration, when the answer was handed over in this process. */
  upstreamMs?: number;
};

export type Settled = { ok: true; value: CompletionResult } | { ok: false; error: ApiError; attempts: Attempt[] };

export interface StartOptions {
  idempotencyKey?: string;
  /**
   * Counts the request against its rate limits and holds attempt 1's worst case (the route's Admission, in one
   * statement); throws when a limit refuses, returns the hold's outcome.
   */
  admit: (
    reservation: Reservation | null,
    alongside?: AdmittedWrite,
  ) => Promise<(ReservationOutcome & { wrote?: boolean }) | null>;
  /** Told when each stage ends (plan, admit, start), for the Server-Timing header. */
  timing?: StageMarks;
  /**
   * How the request's id begins, as its door names its objects: `chatcmpl-` (the default) for a chat completion,
   * `msg_` for a Message. The id is the workflow's business id too (`completion-<id>`), so the id a client holds is
   * the one an operator searches for.
   */
  idPrefix?: string;
  /** What the Temporal UI says of the workflow, in place of "Chat completion". */
  summary?: string;
  /** The workflow's TesseraKind (default `completion`). */
  kind?: string;
  /** Run the workflow's first task here (default: unless the request is keyed); a background response does not. */
  eager?: boolean;
  /** A Response of the Responses door, whose row the workflow keeps (common/responses.ts); its id is the request's. */
  response?: Omit<ResponseRecord, 'responseId'>;
  /**
   * A write made once the request is admitted, before its workflow starts (a Response's row): in the admission's
   * statement when it can carry it (`wrote`), else on its own.
   */
  admittedWrite?: (requestId: string) => AdmittedWrite;
  /** How long the request may wait for capacity while every provider is saturated (seconds; CompletionInput). */
  capacityWaitSeconds?: number;
}

export class CompletionService {
  private readonly dependencies: CompletionServiceDependencies;

  constructor(dependencies: CompletionServiceDependencies) {
    this.dependencies = dependencies;
  }

  /**
   * The candidates that may serve the request for this caller; refuses a model that does not exist, one outside the
   * caller's plan, and images to a model that cannot see them.
   */
  async plan(principal: Principal, request: ChatCompletionRequest) {
    const plan = await this.dependencies.router.plan(
      request,
      principal.operator ? null : { plan: principal.plan, customModels: principal.customLimits?.models },
    );
    if (plan.kind === 'model_not_found') {
      throw new ApiError('model_not_found', `The model '${request.model}' does not exist; see GET /v1/models`, {
        param: 'model',
      });
    }
    if (plan.kind === 'not_in_plan') {
      const unlock = plan.requiredPlan ? `; it needs the ${plan.requiredPlan} plan or higher` : '';
      throw new ApiError(
        'permission_denied',
        `The model '${plan.model}' is not in your ${principal.plan} plan${unlock}`,
        {
          param: 'model',
          requiredPlan: plan.requiredPlan ?? undefined,
        },
      );
    }
    if (plan.kind === 'needs_vision') throw visionRefusal(plan.model);
    return plan.candidates;
  }

  /** Checks the model, admits the request, then starts (or, with an idempotency key, rejoins) its workflow. */
  async start(principal: Principal, request: ChatCompletionRequest, options: StartOptions): Promise<StartedCompletion> {
    const { client, taskQueue, calls, hub, ledger } = this.dependencies;
    const { idempotencyKey, admit, timing } = options;
    const candidates = await this.plan(principal, request);
    const userId = principal.userId;
    const metered = !principal.operator;
    // Only an idempotent repeat compares bodies: hashing every prompt otherwise would be work for nothing.
    const bodyHash = idempotencyKey
      ? createHash('sha256').update(JSON.stringify(request)).digest('base64url')
      : undefined;
    const idPrefix = options.idPrefix ?? 'chatcmpl-';
    const requestId = idempotencyKey
      ? `${idPrefix}${createHash('sha256').update(`${userId}\n${idempotencyKey}`).digest('base64url').slice(0, 24)}`
      : `${idPrefix}${randomBytes(18).toString('base64url')}`;
    const workflowId = completionWorkflowId(requestId);

    if (idempotencyKey) {
      const existing = await this.describe(workflowId);
      if (existing) {
        if (existing.memo?.bodyHash !== bodyHash) {
          throw new ApiError('conflict', 'This Idempotency-Key was already used with a different request body');
        }
        await admit(null);
        const handle = client.workflow.getHandle<typeof chatCompletion>(workflowId);
        const created = Number(existing.memo?.created ?? Math.floor(Date.now() / 1000));
        return { requestId, created, handle, local: false, subscription: null, result: lazyResult(handle) };
      }
    }

    const created = Math.floor(Date.now() / 1000);
    const response = options.response;
    const input: CompletionInput = {
      requestId,
      userId,
      created,
      request,
      candidates,
      metered,
      ...(response ? { response: { ...response, responseId: requestId } } : {}),
      ...(options.capacityWaitSeconds ? { capacityWaitSeconds: options.capacityWaitSeconds } : {}),
    };
    const eager = options.eager ?? !idempotencyKey;
    // Attempt 1's worst case is held before anything is started: a refusal changes nothing.
    const first = candidates[0];
    const reservation =
      metered && first?.creditRate !== undefined
        ? { userId, workflowId, attempt: 1, amount: worstCaseCredits(request, first.creditRate), model: first.model }
        : null;
    timing?.mark('plan');
    const write = options.admittedWrite?.(requestId);
    const held = await admit(reservation, write);
    timing?.mark('admit');
    if (reservation && held && !held.ok) {
      throw new ApiError(
        'insufficient_credits',
        `This request may cost up to ${reservation.amount} credits on ${reservation.model}; ${held.available} are available`,
      );
    }
    if (write && !held?.wrote) {
      try {
        await write.alone();
      } catch (error) {
        if (metered && reservation) await ledger.release({ userId, workflowId, attempt: 1 });
        throw error;
      }
    }
    const subscription = eager ? hub.subscribe(requestId) : null;
    // Attempt 1 starts now rather than after the start round trip; the workflow's activity adopts it (with what the
    // workflow will ask of it: a Response's answer is assembled to be stored).
    if (eager && first) {
      const collect = response ? { collectMessage: true, closeResponse: { responseId: requestId } } : {};
      void calls.startSpeculative({ requestId, attempt: 1, candidate: first, request, userId, metered, ...collect });
    }
    try {
      const handle = await client.workflow.start<typeof chatCompletion>('chatCompletion', {
        workflowId,
        taskQueue,
        args: [input],
        // Eager start hands the first workflow task to this process's worker: no extra round trip.
        // An idempotent start may meet a concurrent twin, which USE_EXISTING joins instead (not eager).
        requestEagerStart: eager,
        // No execution timeout: the workflow is bounded by its finite plan and each attempt's 150 s limit,
        // and a timeout would cost the server a timer task per completion.
        ...(idempotencyKey ? { workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING } : {}),
        typedSearchAttributes: [
          { key: kindKey, value: options.kind ?? 'completion' },
          { key: userKey, value: userId },
          { key: modelKey, value: request.model },
        ],
        memo: { ...(bodyHash ? { bodyHash } : {}), created, model: request.model, stream: !!request.stream },
        staticSummary: `${options.summary ?? 'Chat completion'}: ${request.model}${request.stream ? ', streamed' : ''}, for ${userId}`,
      });
      timing?.mark('start');
      const local = handle.eagerlyStarted;
      if (!local) {
        // The workflow task went to another worker, which calls the provider itself.
        calls.discard(requestId, 1);
        subscription?.close();
      }
      return {
        requestId,
        created,
        handle,
        local,
        subscription: local ? subscription : null,
        result: lazyResult(handle),
      };
    } catch (error) {
      calls.discard(requestId, 1);
      subscription?.close();
      if (!(error instanceof ApiError) && isTemporalOutage(error)) {
        // The server may have taken the start before the connection failed: the workflow may run, and charge. The
        // hold stays (a hold whose workflow never started is released by the sweep of abandoned holds), and the
        // client is told the request may still complete and where to look (docs/gateway.md, "Errors").
        throw dependencyUnavailable('temporal', { requestId: idempotencyKey ? undefined : requestId });
      }
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
  }

  /** The answer of a non-streamed completion: released by the attempt that produced it, or the workflow's result. */
  async answer(started: StartedCompletion): Promise<CompletionAnswer> {
    if (!started.local || !started.subscription) {
      const settled = await started.result();
      if (!settled.ok) throw settled.error;
      return settled.value;
    }
    for await (const item of this.localEvents(started, started.subscription)) {
      if (item.event.type === 'completion') return item.event;
    }
    const settled = await started.result();
    if (!settled.ok) throw settled.error;
    return settled.value;
  }

  /** A streamed completion started earlier (here or elsewhere), to relay from its journal; owner only. */
  async rejoin(
    userId: string,
    operator: boolean,
    requestId: string,
  ): Promise<StartedCompletion & { requestedModel: string }> {
    const workflowId = completionWorkflowId(requestId);
    const description = await this.describe(workflowId);
    if (!description || (!operator && description.typedSearchAttributes.get(userKey) !== userId)) {
      throw new ApiError('not_found', `No request ${requestId}`);
    }
    if (description.memo?.stream !== true)
      throw new ApiError('invalid_request', `Request ${requestId} was not streamed`);
    const handle = this.dependencies.client.workflow.getHandle<typeof chatCompletion>(workflowId);
    return {
      requestId,
      created: Number(description.memo.created),
      requestedModel: String(description.memo.model),
      handle,
      local: false,
      subscription: null,
      result: lazyResult(handle),
    };
  }

  /**
   * The events of a started completion, in order, up to its end: the stream's final `usage` or in-band
   * `error` event, or the workflow's end (all candidates failed).
   */
  async *events(started: StartedCompletion): AsyncGenerator<SequencedStreamEvent> {
    if (started.local && started.subscription) {
      for await (const item of this.localEvents(started, started.subscription)) {
        if (item.event.type === 'completion') continue;
        yield item;
        if (isFinal(item)) return;
      }
      return;
    }
    started.subscription?.close();
    let settled = false;
    let lastSeq = -1;
    const pollMs = this.dependencies.journalPollMs ?? 25;
    const result = started.result().then(() => (settled = true));
    while (true) {
      const finalRead = settled;
      const items = await this.dependencies.journal.poll(started.requestId, lastSeq);
      if (items === null) {
        // The database is out: read again once it is back (the workflow journals the stream's end first).
        await new Promise((resolve) => setTimeout(resolve, outagePollMs));
        continue;
      }
      for (const item of items) {
        lastSeq = item.seq;
        yield item;
        if (isFinal(item)) return;
      }
      if (finalRead) return;
      await Promise.race([new Promise((resolve) => setTimeout(resolve, pollMs)), result]);
    }
  }

  /**
   * Events handed over in-process. The workflow's result is watched only once an attempt ended without an
   * answer: then the workflow either tries the next candidate (whose events follow here) or gives up.
   */
  private async *localEvents(started: StartedCompletion, subscription: StreamSubscription) {
    const iterator = subscription[Symbol.asyncIterator]();
    let workflowEnded: Promise<null> | null = null;
    try {
      while (true) {
        const next = await (workflowEnded ? Promise.race([iterator.next(), workflowEnded]) : iterator.next());
        if (next === null) {
          yield* subscription.drain().filter((item) => item.event.type !== 'attempt-ended');
          return;
        }
        if (next.done) return;
        if (next.value.event.type === 'attempt-ended') {
          workflowEnded ??= started.result().then(() => null);
          continue;
        }
        yield next.value;
      }
    } finally {
      subscription.close();
    }
  }

  /** The trace of a completion: attempts with provider, outcome and latency, for its owner only. */
  async trace(userId: string, operator: boolean, requestId: string) {
    const workflowId = completionWorkflowId(requestId);
    const description = await this.describe(workflowId);
    const owner = description?.typedSearchAttributes.get(userKey);
    if (!description || (!operator && owner !== userId)) throw new ApiError('not_found', `No request ${requestId}`);
    const handle = this.dependencies.client.workflow.getHandle<typeof chatCompletion>(workflowId);
    const base = {
      id: requestId,
      workflow_id: workflowId,
      run_id: description.runId,
      user_id: owner,
      requested_model: description.memo?.model ?? null,
      started_at: description.startTime.toISOString(),
      closed_at: description.closeTime?.toISOString() ?? null,
    };
    if (description.status.name === 'RUNNING') {
      const trace = await handle.query<{ status: string; attempts: unknown[] }>('trace');
      return { ...base, status: 'running', attempts: trace.attempts };
    }
    const settled = await settle(handle.result());
    if (settled.ok) {
      const { value } = settled;
      return {
        ...base,
        status: 'completed',
        model: value.model,
        provider: value.provider,
        usage: value.usage,
        usage_estimated: value.usageEstimated,
        attempts: value.attempts,
      };
    }
    return { ...base, status: 'failed', error: settled.error.body().error, attempts: settled.attempts };
  }

  private async describe(workflowId: string) {
    try {
      return await this.dependencies.client.workflow.getHandle(workflowId).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
  }
}

/** How often a journal relay reads again while the database is out. */
const outagePollMs = 1_000;

const isFinal = (item: SequencedStreamEvent) => item.event.type === 'usage' || item.event.type === 'error';

function lazyResult(handle: WorkflowHandle<typeof chatCompletion>): () => Promise<Settled> {
  let result: Promise<Settled> | null = null;
  return () => (result ??= settle(handle.result(), handle.workflowId));
}

/**
 * Resolves a workflow result to a value or the API error its failure means. Waiting for the result is not the
 * workflow's failure: when the wait itself is cut by a Temporal outage, the request is still accepted and runs on,
 * and its client is told so (503, with the request id to look it up or, with its Idempotency-Key, to send again).
 */
async function settle(result: Promise<CompletionResult>, workflowId?: string): Promise<Settled> {
  try {
    return { ok: true, value: await result };
  } catch (error) {
    if (!(error instanceof WorkflowFailedError) && isTemporalOutage(error)) {
      const requestId = workflowId?.replace(/^completion-/, '');
      return { ok: false, error: dependencyUnavailable('temporal', { requestId }), attempts: [] };
    }
    return toFailure(error);
  }
}

function toFailure(error: unknown): Settled & { ok: false } {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
      const details = cause.details?.[0] as CompletionFailureDetails | undefined;
      const apiError = new ApiError(cause.type as ErrorType, cause.message, {
        retryAfterSeconds: details?.retryAfterSeconds,
      });
      return { ok: false, error: apiError, attempts: details?.attempts ?? [] };
    }
    cause = cause.cause;
  }
  const message = `Completion failed: ${error instanceof Error ? error.message : String(error)}`;
  return { ok: false, error: new ApiError('internal_error', message), attempts: [] };
}
