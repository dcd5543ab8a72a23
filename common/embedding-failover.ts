/**
 * The failover of one embedding request, written once for the two ways it runs:
 *
 * - as the embedding workflow (`embedTexts`, workflows/embedding.workflow.ts): each step a local activity, its history
 *   the request's trace. `POST /v1/embeddings` and RAG indexing embed so.
 * - inside its caller (EmbeddingService.embedQuery): a search query's embedding, the same steps called directly. A
 *   search is a read with nothing to resume, and the agent's `rag_search` is a step of its turn's workflow already:
 *   a workflow of its own cost a query about 8 ms of its ~10 (docs/benchmarks.md, "Files and RAG").
 *
 * The plan's candidates in order (the model's providers, then the caller's fallback models), each attempt holding,
 * calling and settling or releasing its own credits; the `settle` and `release` steps finish what an attempt could
 * not. A provider's refusal of the request itself (400, 413, 422) ends it without failover. Workflow-safe: no I/O.
 */
import { failedAttempt, modelCallFailure as failure, type Attempt, type CreditSettlement } from './completion.ts';
import type { EmbeddingCandidate, EmbeddingInput, EmbeddingResult, EmbeddingUsage } from './embeddings.ts';

/** One attempt on one candidate (the `callEmbeddingProvider` activity's input). */
export interface EmbeddingAttemptInput {
  requestId: string;
  attempt: number;
  candidate: EmbeddingCandidate;
  texts: string[];
  dimensions?: number;
  user?: string;
  /** The gateway's token count of the texts: the hold, and the usage when the provider reports none. */
  promptTokens: number;
  userId: string;
  metered: boolean;
  /** Hold this attempt's credits before calling (false only for an attempt 1 the API held). */
  reserve: boolean;
  /** The ledger's key base: `embedding-<request id>`, whether or not a workflow of that id runs. */
  workflowId: string;
}

/** How an attempt that did not fail ended (activities/embeddings/embedding-calls.ts adds the failed case). */
export type EmbeddingAttemptOutcome = (
  | {
      outcome: 'succeeded';
      latencyMs: number;
      usage: EmbeddingUsage;
      usageEstimated: boolean;
      count: number;
      dimensions: number;
    }
  | { outcome: 'skipped'; reason: string; insufficientCredits?: boolean }
) & {
  /** The attempt's credits are settled (success) or released (otherwise) already; else the `settle`/`release` step. */
  ledgerDone?: boolean;
};

/** An attempt that did not fail, naming who served; a failed one throws an ApplicationFailure of type `ProviderError`. */
export type EmbeddingAttemptResult = EmbeddingAttemptOutcome & { provider: string; model: string };

export interface EmbeddingSteps {
  call(input: EmbeddingAttemptInput): Promise<EmbeddingAttemptResult>;
  settle(input: CreditSettlement): Promise<unknown>;
  release(key: { userId: string; workflowId: string; attempt: number }): Promise<void>;
  /** A candidate of another model than the one asked for served (the workflow's search attribute). */
  servedBy?(model: string): void;
}

export async function embedWithFailover(
  input: EmbeddingInput,
  workflowId: string,
  attempts: Attempt[],
  steps: EmbeddingSteps,
): Promise<EmbeddingResult> {
  const { userId, metered } = input;
  const release = async (attempt: number, done: boolean | undefined) => {
    if (metered && !done) await steps.release({ userId, workflowId, attempt });
  };
  if (input.candidates.length === 0) {
    // (Nothing was held: a hold is taken at a candidate's rate.)
    throw failure(
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
      const result = await steps.call({
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
      if (candidate.model !== input.model) steps.servedBy?.(candidate.model);
      if (metered && candidate.creditRate !== undefined && !result.ledgerDone) {
        await steps.settle({
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
      const { message, details } = failedAttempt(error, attempts, trace(attempt, candidate));
      lastRetryAfter = details?.retryAfterSeconds ?? lastRetryAfter;
      await release(attempt, details?.ledgerDone);
      if (details && !details.retryable) {
        throw failure('invalid_request', `The provider rejected the request: ${message}`, attempts);
      }
    }
  }
  const summary = attempts.map((attempt) => `${attempt.provider} (${attempt.model}): ${attempt.error}`).join('; ');
  if (shortOfCredits) {
    throw failure('insufficient_credits', `Not enough credits for any candidate: ${summary}`, attempts);
  }
  throw failure(
    'upstream_error',
    `All ${input.candidates.length} candidates failed: ${summary}`,
    attempts,
    lastRetryAfter,
  );
}

function trace(attempt: number, candidate: EmbeddingCandidate) {
  return { attempt, model: candidate.model, provider: candidate.provider };
}
