/**
 * One model call with failover, shared by the workflows that call models (completions, chat turns): the plan's
 * candidates in order, each attempt a local activity that reserves, calls and settles or releases its credits, the
 * saga steps finishing what an attempt could not. Records each attempt in `attempts` (the trace) and returns the
 * serving candidate's result, or throws the ApplicationFailure the API turns into its error.
 */
import { proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type {
  CallProviderInput,
  CallProviderResult,
  CompletionActivities,
} from '../activities/completion-activities.ts';
import {
  failedAttempt,
  modelCallFailure,
  type Attempt,
  type Candidate,
  type CompletionInput,
} from '../common/completion.ts';
import { untilStoresAnswer } from '../common/retry-policies.ts';
import { modelKey } from '../common/search-attributes.ts';

// One try per candidate: failover to the next candidate is the workflow's decision, not a blind retry. A provider's
// failure is a non-retryable `ProviderError`, and so is any other error but one: the platform's own database being
// unreachable (`StoreUnavailable`), which is waited out here, so that an outage never decides a request's outcome.
const { callProvider } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '150s',
  retry: untilStoresAnswer,
});

// Saga steps: idempotent ledger writes, retried until the database answers (the answer is already out).
const { settleCredits, releaseCredits } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Lifts the hold of an attempt that will not be made: the hold the API takes for a turn's first call before the
 * turn starts, when the turn ends before calling (idempotent; nothing happens where no hold is left).
 */
export async function releaseUnusedHold(key: { userId: string; workflowId: string; attempt: number }): Promise<void> {
  await releaseCredits(key);
}

export interface ModelCallOptions {
  metered: boolean;
  /** The workflow's trace: each attempt is appended. */
  attempts: Attempt[];
  /** The ledger's key base (the calling workflow's id). */
  workflowId: string;
  /** Number of this call's first attempt (a chat turn's later rounds continue the numbering). Default 1. */
  firstAttempt?: number;
  /** Passed to every attempt (stream position, whether to assemble a streamed message). */
  extra?: Pick<
    CallProviderInput,
    | 'seqBase'
    | 'collectMessage'
    | 'workflowId'
    | 'heldAttempt'
    | 'journalFirst'
    | 'stoppable'
    | 'closeTurn'
    | 'closeResponse'
  >;
}

export type ModelCallResult = Extract<CallProviderResult, { outcome: 'succeeded' }> & {
  candidate: Candidate;
  /** The number the next attempt of this workflow takes. */
  nextAttempt: number;
};

export async function callWithFailover(input: CompletionInput, options: ModelCallOptions): Promise<ModelCallResult> {
  const { candidates } = input;
  const { metered, attempts, workflowId } = options;
  const firstAttempt = options.firstAttempt ?? 1;
  // The provider call settles or releases its credits itself; these durable steps finish what it could not.
  const release = async (attempt: number, done: boolean | undefined) => {
    if (metered && !done) await releaseCredits({ userId: input.userId, workflowId, attempt });
  };
  let lastRetryAfter: number | undefined;
  let shortOfCredits = false;
  for (const [index, candidate] of candidates.entries()) {
    const attempt = firstAttempt + index;
    try {
      const result = await callProvider({
        requestId: input.requestId,
        attempt,
        ...(index > 0 ? { failover: true } : {}),
        candidate,
        request: input.request,
        userId: input.userId,
        metered,
        ...options.extra,
      });
      if (result.outcome === 'skipped') {
        shortOfCredits ||= !!result.insufficientCredits;
        await release(attempt, result.ledgerDone);
        attempts.push({
          attempt,
          model: candidate.model,
          provider: candidate.provider,
          outcome: 'skipped',
          latency_ms: 0,
          error: result.reason,
        });
        continue;
      }
      attempts.push({
        attempt,
        model: candidate.model,
        provider: candidate.provider,
        outcome: 'succeeded',
        latency_ms: result.latencyMs,
      });
      if (candidate.model !== input.request.model) upsertSearchAttributes([{ key: modelKey, value: candidate.model }]);
      if (metered && candidate.creditRate !== undefined && !result.ledgerDone) {
        await settleCredits({
          userId: input.userId,
          workflowId,
          attempt,
          model: candidate.model,
          creditRate: candidate.creditRate,
          usage: result.usage,
          usageEstimated: result.usageEstimated,
        });
      }
      return { ...result, candidate, nextAttempt: firstAttempt + candidates.length };
    } catch (error) {
      const { message, details } = failedAttempt(error, attempts, {
        attempt,
        model: candidate.model,
        provider: candidate.provider,
      });
      lastRetryAfter = details?.retryAfterSeconds ?? lastRetryAfter;
      await release(attempt, details?.ledgerDone);
      if (details && !details.retryable) {
        throw modelCallFailure('invalid_request', `The provider rejected the request: ${message}`, attempts);
      }
      if (details?.contentSent) {
        // Tokens already reached the client: the stream ended with an in-band error instead of a silent cut.
        throw modelCallFailure(
          'upstream_error',
          `Stream interrupted after content was sent: ${message}`,
          attempts,
          undefined,
          details.nextSeq,
        );
      }
    }
  }
  if (shortOfCredits) {
    throw modelCallFailure(
      'insufficient_credits',
      `Not enough credits for any remaining model: ${describe(attempts)}`,
      attempts,
    );
  }
  throw modelCallFailure(
    'upstream_error',
    `All ${candidates.length} candidate models failed: ${describe(attempts)}`,
    attempts,
    lastRetryAfter,
  );
}

function describe(attempts: Attempt[]): string {
  return attempts.map((attempt) => `${attempt.model}: ${attempt.error}`).join('; ');
}

export { modelCallFailure };
