/**
 * The embedding workflow's activity: one attempt on one candidate (embedding-calls.ts), run as a local activity in
 * the process that runs the workflow task (for a request started eagerly, the process whose caller waits).
 */
import { failingAsActivity } from '../failures.ts';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ProviderFailureDetails } from '../../common/completion.ts';
import type { EmbeddingCallInput, EmbeddingCallOutcome, EmbeddingCalls } from './embedding-calls.ts';

/** The outcome as recorded in the attempt's history marker, naming who served it for operators. */
export type EmbeddingCallResult = Exclude<EmbeddingCallOutcome, { outcome: 'failed' }> & {
  provider: string;
  model: string;
};

export function createEmbeddingActivities(dependencies: { embeddingCalls: EmbeddingCalls }) {
  return {
    /** Calls one candidate; a failure is an ApplicationFailure of type `ProviderError` (the workflow fails over). */
    async callEmbeddingProvider(input: EmbeddingCallInput): Promise<EmbeddingCallResult> {
      const signal = Context.current().cancellationSignal;
      return attemptResult(input, await failingAsActivity(() => dependencies.embeddingCalls.run(input, signal)));
    },
  };
}

/**
 * An attempt's outcome as its caller takes it (the workflow's local activity, or a query embedded directly): what
 * did not fail, naming who served; a failure thrown as an ApplicationFailure of type `ProviderError`.
 */
export function attemptResult(input: EmbeddingCallInput, result: EmbeddingCallOutcome): EmbeddingCallResult {
  const { provider, model } = input.candidate;
  if (result.outcome !== 'failed') return { ...result, provider, model };
  const details: ProviderFailureDetails = {
    kind: result.error.kind,
    status: result.error.status,
    retryable: result.error.retryable,
    contentSent: false,
    retryAfterSeconds: result.error.retryAfterSeconds,
    latencyMs: result.latencyMs,
    ledgerDone: result.ledgerDone,
  };
  throw ApplicationFailure.create({
    type: 'ProviderError',
    message: `${provider} (${model}): ${result.error.message}`,
    nonRetryable: true,
    details: [details],
  });
}

export type EmbeddingActivities = ReturnType<typeof createEmbeddingActivities>;
