/**
 * The completion workflow's activity. It runs as a local activity in the process that runs the workflow
 * task: for an eagerly started completion, the API process that holds the HTTP response.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { failingAsActivity } from './failures.ts';
import type { CreditSettlement, ProviderFailureDetails, SequencedStreamEvent } from '../common/completion.ts';
import { creditsFor } from '../common/credits.ts';
import type { CreditLedger } from './credits/credit-ledger.ts';
import type { ProviderCallInput, ProviderCalls } from './provider-calls.ts';
import type { StreamJournal } from './streaming/stream-journal.ts';

export type CallProviderInput = ProviderCallInput;

/** The outcome as recorded in the attempt's history marker, naming who served it for operators. */
export type CallProviderResult = Exclude<Awaited<ReturnType<ProviderCalls['callOrAdopt']>>, { outcome: 'failed' }> & {
  provider: string;
  model: string;
};

export type { ProviderFailureDetails };

export function createCompletionActivities(dependencies: {
  calls: ProviderCalls;
  ledger: CreditLedger;
  journal: StreamJournal;
}) {
  const { ledger, journal } = dependencies;
  return {
    /**
     * Writes a streamed answer's last events, which its call ended without journalling (the database was out): they
     * came back in the call's result (`journalTail`), kept by the workflow's history until now (idempotent).
     */
    async journalEvents(input: { requestId: string; events: SequencedStreamEvent[] }): Promise<void> {
      await journal.insert(input.requestId, input.events);
    },

    /** Charges an attempt's real usage at the serving model's rate and lifts its hold (idempotent). */
    async settleCredits(input: CreditSettlement): Promise<{ credits: number }> {
      return settleAttempt(ledger, input);
    },

    /** Lifts the hold of an attempt that served nothing (idempotent). */
    async releaseCredits(input: { userId: string; workflowId: string; attempt: number }): Promise<void> {
      await ledger.release(input);
    },

    /**
     * Calls one candidate, or adopts the API's speculative call for this attempt when one is in flight. Fails with a
     * non-retryable `ProviderError` when the provider failed, with a retryable `StoreUnavailable` when the platform's
     * own database could not be reached before or after the call (a hold, a probe claim, a journal read: the
     * workflow's retry waits the outage out), and non-retryably for anything else.
     */
    async callProvider(input: CallProviderInput): Promise<CallProviderResult> {
      const signal = Context.current().cancellationSignal;
      const result = await failingAsActivity(() => dependencies.calls.callOrAdopt(input, signal));
      const { provider, model } = input.candidate;
      if (result.outcome !== 'failed') return { ...result, provider, model };
      const { error, contentSent, latencyMs, ledgerDone, nextSeq } = result;
      const details: ProviderFailureDetails = {
        kind: error.kind,
        status: error.status,
        retryable: error.retryable,
        contentSent,
        retryAfterSeconds: error.retryAfterSeconds,
        latencyMs,
        ledgerDone,
        nextSeq,
      };
      throw ApplicationFailure.create({
        type: 'ProviderError',
        message: `${input.candidate.provider} (${input.candidate.model}): ${error.message}`,
        nonRetryable: true,
        details: [details],
      });
    },
  };
}

export type CompletionActivities = ReturnType<typeof createCompletionActivities>;
/** Charges an attempt's real usage at the serving model's rate and lifts its hold (idempotent: keyed by attempt). */
export async function settleAttempt(ledger: CreditLedger, input: CreditSettlement): Promise<{ credits: number }> {
  const credits = creditsFor(input.usage.total_tokens, input.creditRate);
  await ledger.settle({
    userId: input.userId,
    workflowId: input.workflowId,
    attempt: input.attempt,
    amount: credits,
    model: input.model,
    promptTokens: input.usage.prompt_tokens,
    completionTokens: input.usage.completion_tokens,
    estimated: input.usageEstimated,
  });
  return { credits };
}
