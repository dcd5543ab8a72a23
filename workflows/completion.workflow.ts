/**
 * completionWorkflow: one chat completion, from route planning through failover to the served answer.
 * Its history is the request's trace: the plan is its input, every attempt a local activity (provider,
 * outcome, latency). Attempt 1 usually adopts the provider call the API started alongside the workflow.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  defineQuery,
  patched,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CompletionActivities, ProviderFailureDetails } from '../activities/completion-activities.ts';
import type { Attempt, CompletionFailureDetails, CompletionInput, CompletionResult } from '../common/completion.ts';
import type { ErrorType } from '../common/errors.ts';
import { modelKey } from '../common/search-attributes.ts';

// One try per candidate: failover to the next candidate is this workflow's decision, not a blind retry.
const { callProvider } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '150s',
  retry: { maximumAttempts: 1 },
});

// Saga steps: idempotent ledger writes, retried until the database answers (the answer is already out).
const { settleCredits, releaseCredits } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export interface CompletionTrace {
  status: 'running' | 'completed' | 'failed';
  attempts: Attempt[];
}

export const traceQuery = defineQuery<CompletionTrace>('trace');

export async function completionWorkflow(input: CompletionInput): Promise<CompletionResult> {
  const attempts: Attempt[] = [];
  setHandler(traceQuery, () => ({ status: 'running', attempts }));

  const { candidates } = input;
  if (candidates.length === 0) {
    throw failure(
      'upstream_error',
      'No provider is available for this model (no key configured or circuit open)',
      attempts,
    );
  }

  // Completions started before credits existed carry no `metered` and take the old path on replay.
  const metered = patched('credit-saga') && !!input.metered;
  const workflowId = workflowInfo().workflowId;
  // The provider call settles or releases its credits itself; these durable steps finish what it could not.
  const release = async (attempt: number, done: boolean | undefined) => {
    if (metered && !done) await releaseCredits({ userId: input.userId, workflowId, attempt });
  };
  let lastRetryAfter: number | undefined;
  let shortOfCredits = false;
  for (const [index, candidate] of candidates.entries()) {
    const attempt = index + 1;
    try {
      const result = await callProvider({
        requestId: input.requestId,
        attempt,
        candidate,
        request: input.request,
        userId: input.userId,
        metered,
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
      return {
        requestId: input.requestId,
        model: candidate.model,
        provider: candidate.provider,
        created: input.created,
        finishReason: result.finishReason,
        message: result.message,
        usage: result.usage,
        usageEstimated: result.usageEstimated,
        attempts,
      };
    } catch (error) {
      // A local activity's failure may arrive bare or wrapped in an ActivityFailure.
      const cause = error instanceof ActivityFailure ? error.cause : error;
      if (!(cause instanceof ApplicationFailure) || cause.type !== 'ProviderError') throw error;
      const details = cause.details?.[0] as ProviderFailureDetails | undefined;
      attempts.push({
        attempt,
        model: candidate.model,
        provider: candidate.provider,
        outcome: 'failed',
        latency_ms: details?.latencyMs ?? 0,
        status: details?.status,
        error: cause.message,
      });
      lastRetryAfter = details?.retryAfterSeconds ?? lastRetryAfter;
      await release(attempt, details?.ledgerDone);
      if (details && !details.retryable) {
        throw failure('invalid_request', `The provider rejected the request: ${cause.message}`, attempts);
      }
      if (details?.contentSent) {
        // Tokens already reached the client: the stream ended with an in-band error instead of a silent cut.
        throw failure('upstream_error', `Stream interrupted after content was sent: ${cause.message}`, attempts);
      }
    }
  }
  if (shortOfCredits) {
    throw failure(
      'insufficient_credits',
      `Not enough credits for any remaining model: ${describe(attempts)}`,
      attempts,
    );
  }
  throw failure(
    'upstream_error',
    `All ${candidates.length} candidate models failed: ${describe(attempts)}`,
    attempts,
    lastRetryAfter,
  );
}

function describe(attempts: Attempt[]): string {
  return attempts.map((attempt) => `${attempt.model}: ${attempt.error}`).join('; ');
}

function failure(
  errorType: ErrorType,
  message: string,
  attempts: Attempt[],
  retryAfterSeconds?: number,
): ApplicationFailure {
  const details: CompletionFailureDetails = { errorType, attempts, retryAfterSeconds };
  return ApplicationFailure.create({ type: errorType, message, nonRetryable: true, details: [details] });
}
