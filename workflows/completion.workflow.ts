/**
 * chatCompletion: one chat completion, from route planning through failover to the served answer.
 * Its history is the request's trace: the plan is its input, every attempt a local activity (provider,
 * outcome, latency). Attempt 1 usually adopts the provider call the API started alongside the workflow.
 *
 * A completion that is a Response of the Responses door (`input.response`) also keeps the response's row: a
 * background one is marked `in_progress` when a worker takes it, and every one's end is recorded (its output, usage,
 * status, or its failure), by its model call with the settlement when it could, else by this workflow. A background
 * response is cancellable: the `cancelResponse` signal ends it before its call, and the API stops a call already
 * streaming directly (activities/streaming/turn-stops.ts, keyed by this workflow's id), which then ends with what it
 * generated, settled at what it used.
 *
 * `completionWorkflow` is the same workflow under the type earlier releases started: it stays registered so their
 * runs (with or without the `credit-saga` patch marker) replay and finish, and can go once none is left.
 */
import {
  ApplicationFailure,
  defineQuery,
  defineSignal,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { ResponseActivities } from '../activities/responses/response-store.ts';
import type { Attempt, CompletionInput, CompletionResult } from '../common/completion.ts';
import { allSaturated } from '../common/model-call-failover.ts';
import { modelSaturated, modelServed, releaseCapacity, waitForCapacity } from './capacity.ts';
import { callWithFailover, modelCallFailure, releaseUnusedHold } from './model-call.ts';

export interface CompletionTrace {
  status: 'running' | 'completed' | 'failed';
  attempts: Attempt[];
}

export const traceQuery = defineQuery<CompletionTrace>('trace');

/** Cancels a background Response (`POST /v1/responses/{id}/cancel`). */
export const cancelResponseSignal = defineSignal('cancelResponse');

// The response's row: retried until the database answers (the answer is already out).
const { startResponse, requeueResponse, recordResponse } = proxyLocalActivities<ResponseActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

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
  const workflowId = workflowInfo().workflowId;
  const { response } = input;
  if (!response) {
    // A synchronous request that may wait for capacity (`X-Tessera-Capacity-Wait`, docs/capacity-queue.md): while
    // every provider is saturated and the bound leaves room, it waits (1 s, doubling) and tries the plan again.
    const deadline = input.capacityWaitSeconds ? Date.now() + input.capacityWaitSeconds * 1000 : 0;
    for (let firstAttempt = 1, pause = 1_000; ; firstAttempt += input.candidates.length, pause *= 2) {
      const tried = attempts.length;
      try {
        const served = await callWithFailover(input, { metered, attempts, workflowId, firstAttempt });
        return result(input, served, attempts);
      } catch (error) {
        if (Date.now() + pause > deadline || !allSaturated(attempts.slice(tried))) throw error;
        await sleep(pause);
      }
    }
  }

  let cancelled = false;
  setHandler(cancelResponseSignal, () => void (cancelled = true));
  const { responseId, background } = response;
  // A background response waits for a slot in the capacity queue (docs/capacity-queue.md); runs from before the queue
  // (no marker in their history) go straight on.
  const queued = background && patched('capacity-queue');
  const slot = {
    holder: workflowId,
    userId: input.userId,
    model: input.request.model,
    kind: 'response',
    priority: response.priority ?? ('normal' as const),
  };
  const cancelledWhileQueued = async () => {
    // Cancelled before its call: nothing is called, and the hold the API took is lifted.
    if (metered) await releaseUnusedHold({ userId: input.userId, workflowId, attempt: 1 });
    await recordResponse({ responseId, outcome: 'cancelled' });
    return { ...result(input, null, attempts), stopped: true };
  };
  let grant = queued ? await waitForCapacity(slot, { stop: () => cancelled }) : 'granted';
  if (!grant) return cancelledWhileQueued();
  if (background) await startResponse(responseId);
  if (cancelled) {
    if (queued) await releaseCapacity({ holder: workflowId });
    return cancelledWhileQueued();
  }
  try {
    let firstAttempt = 1;
    for (;;) {
      const tried = attempts.length;
      try {
        const served = await callWithFailover(input, {
          metered,
          attempts,
          workflowId,
          firstAttempt,
          // The output is stored, so a streamed answer is assembled too; a background one may be stopped. The call
          // writes the response's end with its settlement; when it could not, this workflow does.
          extra: { collectMessage: true, closeResponse: { responseId }, ...(background ? { stoppable: true } : {}) },
        });
        if (!served.responseClosed)
          await recordResponse({
            responseId,
            outcome: 'answered',
            model: served.candidate.model,
            message: served.message,
            finishReason: served.finishReason,
            usage: served.usage,
            stopped: !!served.stopped,
          });
        if (grant === 'probe') await modelServed(slot.model);
        return { ...result(input, served, attempts), ...(served.stopped ? { stopped: true } : {}) };
      } catch (error) {
        // Every provider saturated: the response is not failed but waits in the queue again, its place kept, and
        // the model's back-off grows; the next round's attempts hold their own credits.
        if (!queued || cancelled || !allSaturated(attempts.slice(tried))) throw error;
        await modelSaturated(slot.model);
        await releaseCapacity({ holder: workflowId, requeue: true });
        await requeueResponse(responseId);
        grant = await waitForCapacity(slot, { stop: () => cancelled });
        if (!grant) {
          await recordResponse({ responseId, outcome: 'cancelled' });
          return { ...result(input, null, attempts), stopped: true };
        }
        await startResponse(responseId);
        firstAttempt += input.candidates.length;
      }
    }
  } catch (error) {
    const failure = error instanceof ApplicationFailure ? error : null;
    await recordResponse({
      responseId,
      outcome: 'failed',
      code: failure?.type ?? 'internal_error',
      message: failure?.message ?? String(error),
    });
    throw error;
  } finally {
    if (queued) await releaseCapacity({ holder: workflowId });
  }
}

function result(
  input: CompletionInput,
  served: Awaited<ReturnType<typeof callWithFailover>> | null,
  attempts: Attempt[],
): CompletionResult {
  return {
    requestId: input.requestId,
    model: served?.candidate.model ?? input.request.model,
    provider: served?.candidate.provider ?? '',
    created: input.created,
    finishReason: served?.finishReason ?? 'stop',
    message: served?.message ?? null,
    usage: served?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    usageEstimated: served?.usageEstimated ?? false,
    attempts,
  };
}
