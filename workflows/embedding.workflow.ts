/**
 * embedTexts: one embedding request (`POST /v1/embeddings`, or EmbeddingService.embed for RAG), from the router's
 * plan through failover to the serving provider. Its history is the request's trace: the plan is its input, every
 * attempt a local activity (provider, outcome, latency) that holds, settles or releases its own credits; the saga
 * steps finish what an attempt could not. The vectors are not in history (common/embeddings.ts).
 *
 * Failover follows the plan only: the providers serving the requested model, then the models the caller named in
 * `fallback_models`. A provider's refusal of the request itself (400, 413, 422) ends the request without failover.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EmbeddingActivities } from '../activities/embeddings/embedding-activities.ts';
import type { CompletionActivities, ProviderFailureDetails } from '../activities/completion-activities.ts';
import type { Attempt } from '../common/completion.ts';
import type { EmbeddingInput, EmbeddingResult } from '../common/embeddings.ts';
import { modelKey } from '../common/search-attributes.ts';
import { traceQuery } from './completion.workflow.ts';
import { modelCallFailure } from './model-call.ts';

// One try per candidate: failover is the workflow's decision. The local engine may take minutes for a large batch.
const { callEmbeddingProvider } = proxyLocalActivities<EmbeddingActivities>({
  startToCloseTimeout: '10m',
  retry: { maximumAttempts: 1 },
});

// Saga steps: idempotent ledger writes, retried until the database answers (the vectors are already out).
const { settleCredits, releaseCredits } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function embedTexts(input: EmbeddingInput): Promise<EmbeddingResult> {
  const attempts: Attempt[] = [];
  setHandler(traceQuery, () => ({ status: 'running', attempts }));
  const { workflowId } = workflowInfo();
  const { userId, metered } = input;
  const release = async (attempt: number, done: boolean | undefined) => {
    if (metered && !done) await releaseCredits({ userId, workflowId, attempt });
  };
  if (input.candidates.length === 0) {
    // (Nothing was held: a hold is taken at a candidate's rate.)
    throw modelCallFailure(
      'upstream_error',
      `No provider is available for ${input.model} (no key configured, or its circuit is open)`,
      attempts,
    );
  }
  let shortOfCredits = false;
  let lastRetryAfter: number | undefined;
  for (const [index, candidate] of input.candidates.entries()) {
    const attempt = index + 1;
    try {
      const result = await callEmbeddingProvider({
        requestId: input.requestId,
        attempt,
        candidate,
        texts: input.texts,
        dimensions: input.dimensions,
        user: input.user,
        promptTokens: input.promptTokens,
        userId,
        metered,
        reserve: !(attempt === 1 && input.firstAttemptHeld),
        workflowId,
      });
      if (result.outcome === 'skipped') {
        shortOfCredits ||= !!result.insufficientCredits;
        await release(attempt, result.ledgerDone);
        attempts.push({ ...trace(attempt, candidate), outcome: 'skipped', latency_ms: 0, error: result.reason });
        continue;
      }
      attempts.push({ ...trace(attempt, candidate), outcome: 'succeeded', latency_ms: result.latencyMs });
      if (candidate.model !== input.model) upsertSearchAttributes([{ key: modelKey, value: candidate.model }]);
      if (metered && candidate.creditRate !== undefined && !result.ledgerDone) {
        await settleCredits({
          userId,
          workflowId,
          attempt,
          model: candidate.model,
          creditRate: candidate.creditRate,
          usage: { ...result.usage, completion_tokens: 0 },
          usageEstimated: result.usageEstimated,
        });
      }
      return {
        requestId: input.requestId,
        model: candidate.model,
        provider: candidate.provider,
        count: result.count,
        dimensions: result.dimensions,
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
        ...trace(attempt, candidate),
        outcome: 'failed',
        latency_ms: details?.latencyMs ?? 0,
        status: details?.status,
        error: cause.message,
      });
      lastRetryAfter = details?.retryAfterSeconds ?? lastRetryAfter;
      await release(attempt, details?.ledgerDone);
      if (details && !details.retryable) {
        throw modelCallFailure('invalid_request', `The provider rejected the request: ${cause.message}`, attempts);
      }
    }
  }
  const summary = attempts.map((attempt) => `${attempt.provider} (${attempt.model}): ${attempt.error}`).join('; ');
  if (shortOfCredits) {
    throw modelCallFailure('insufficient_credits', `Not enough credits for any candidate: ${summary}`, attempts);
  }
  throw modelCallFailure(
    'upstream_error',
    `All ${input.candidates.length} candidates failed: ${summary}`,
    attempts,
    lastRetryAfter,
  );
}

function trace(attempt: number, candidate: EmbeddingInput['candidates'][number]) {
  return { attempt, model: candidate.model, provider: candidate.provider };
}
