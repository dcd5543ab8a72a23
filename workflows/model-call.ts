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
import { modelCallFailure, type CompletionInput } from '../common/completion.ts';
import {
  callWithFailover as failover,
  type ModelCallOptions as Options,
  type ModelCallResult as Result,
} from '../common/model-call-failover.ts';
import { untilStoresAnswer } from '../common/retry-policies.ts';
import { modelKey } from '../common/search-attributes.ts';

// One try per candidate: failover to the next candidate is the workflow's decision, not a blind retry. A provider's
// failure is a non-retryable `ProviderError`, and so is any other error but one: the platform's own database being
// unreachable (`StoreUnavailable`), which is waited out here, so that an outage never decides a request's outcome.
const { callProvider } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '150s',
  retry: untilStoresAnswer,
});

// Saga steps: idempotent ledger and journal writes, retried until the database answers (the answer is already out).
const { settleCredits, releaseCredits, journalEvents } = proxyLocalActivities<CompletionActivities>({
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

/** What a workflow's model call passes to every attempt. */
export type AttemptExtra = Pick<
  CallProviderInput,
  | 'seqBase'
  | 'collectMessage'
  | 'workflowId'
  | 'heldAttempt'
  | 'journalFirst'
  | 'stoppable'
  | 'closeTurn'
  | 'closeResponse'
  | 'reserve'
>;
export type ModelCallOptions = Options<AttemptExtra>;
export type ModelCallResult = Result<CallProviderResult>;

/** One model call with failover (common/model-call-failover.ts), each step a local activity of the calling workflow. */
export function callWithFailover(input: CompletionInput, options: ModelCallOptions): Promise<ModelCallResult> {
  return failover(input, options, {
    call: callProvider,
    settle: settleCredits,
    release: releaseCredits,
    journal: journalEvents,
    servedBy: (model) => upsertSearchAttributes([{ key: modelKey, value: model }]),
  });
}

export { modelCallFailure };
