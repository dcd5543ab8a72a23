/**
 * chatCompletion: one chat completion, from route planning through failover to the served answer.
 * Its history is the request's trace: the plan is its input, every attempt a local activity (provider,
 * outcome, latency). Attempt 1 usually adopts the provider call the API started alongside the workflow.
 *
 * `completionWorkflow` is the same workflow under the type earlier releases started: it stays registered so their
 * runs (with or without the `credit-saga` patch marker) replay and finish, and can go once none is left.
 */
import { defineQuery, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Attempt, CompletionInput, CompletionResult } from '../common/completion.ts';
import { callWithFailover, modelCallFailure } from './model-call.ts';

export interface CompletionTrace {
  status: 'running' | 'completed' | 'failed';
  attempts: Attempt[];
}

export const traceQuery = defineQuery<CompletionTrace>('trace');

/** One chat completion (the type the API starts). */
export async function chatCompletion(input: CompletionInput): Promise<CompletionResult> {
  // Completions started before credits existed carry no `metered` and bill nothing.
  return complete(input, () => !!input.metered);
}

/** Earlier releases' type for the same workflow; replays their histories (see the file comment). */
export async function completionWorkflow(input: CompletionInput): Promise<CompletionResult> {
  // This gate records a marker and upserts TemporalChangeVersion (a third visibility write per completion), which is
  // why new completions start as `chatCompletion`, where the input alone decides.
  return complete(input, () => patched('credit-saga') && !!input.metered);
}

/** `isMetered` is asked once, where the patch check always stood (after the empty-plan check). */
async function complete(input: CompletionInput, isMetered: () => boolean): Promise<CompletionResult> {
  const attempts: Attempt[] = [];
  setHandler(traceQuery, () => ({ status: 'running', attempts }));

  if (input.candidates.length === 0) {
    throw modelCallFailure(
      'upstream_error',
      'No provider is available for this model (no key configured or circuit open)',
      attempts,
    );
  }
  const metered = isMetered();
  const served = await callWithFailover(input, { metered, attempts, workflowId: workflowInfo().workflowId });
  return {
    requestId: input.requestId,
    model: served.candidate.model,
    provider: served.candidate.provider,
    created: input.created,
    finishReason: served.finishReason,
    message: served.message,
    usage: served.usage,
    usageEstimated: served.usageEstimated,
    attempts,
  };
}
