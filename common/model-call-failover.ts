/**
 * The failover of one chat model call, written once for the two ways it runs (as common/embedding-failover.ts is for
 * embeddings):
 *
 * - in a workflow (workflows/model-call.ts): each step a local activity, its history the call's trace. Completions and
 *   chat turns call models so.
 * - inside an activity (activities/batches/batch-lines.ts): a batch's line, the same steps called directly. A batch is
 *   one workflow whose lines are its local activities; a workflow per line would cost each line a workflow's start,
 *   history and visibility writes for a call nobody waits on (docs/client-apis.md, "Batches").
 *
 * The plan's candidates in order, each attempt holding (after the first, which its caller held), calling, and settling
 * or releasing its own credits; the `settle` and `release` steps finish what an attempt could not. A provider's refusal
 * of the request itself ends the call without failover, and so does a stream cut after content reached the client.
 * Workflow-safe: no I/O of its own.
 */
import {
  failedAttempt,
  modelCallFailure,
  type Attempt,
  type Candidate,
  type CompletionInput,
  type CreditSettlement,
  type SequencedStreamEvent,
} from './completion.ts';

/** What every attempt is given; a caller adds its `Extra` (stream position, what the call closes). */
export interface AttemptCall {
  requestId: string;
  attempt: number;
  failover?: boolean;
  candidate: Candidate;
  request: CompletionInput['request'];
  userId: string;
  metered: boolean;
}

/** How an attempt that did not fail ended (a failed one throws an ApplicationFailure of type `ProviderError`). */
export type AttemptAnswer = (
  | {
      outcome: 'succeeded';
      latencyMs: number;
      usage: CreditSettlement['usage'];
      usageEstimated: boolean;
      /** A streamed answer's last events, which the database did not take when the attempt ended: `journal` them. */
      journalTail?: SequencedStreamEvent[];
    }
  | { outcome: 'skipped'; reason: string; insufficientCredits?: boolean; retryAfterSeconds?: number }
) & { ledgerDone?: boolean };

/**
 * The steps a model call takes: the activities of workflows/model-call.ts, or the same functions called directly
 * (the activity `callProvider` is the `call` of both: activities/completion-activities.ts).
 */
export interface ModelCallSteps<Extra, Answer extends AttemptAnswer> {
  call(input: AttemptCall & Extra): Promise<Answer>;
  settle(input: CreditSettlement): Promise<unknown>;
  release(key: { userId: string; workflowId: string; attempt: number }): Promise<void>;
  /** Writes a stream's last events to its journal (an attempt's `journalTail`), retried until the database answers. */
  journal(input: { requestId: string; events: SequencedStreamEvent[] }): Promise<void>;
  /** A candidate of another model than the one asked for served (the workflow's search attribute). */
  servedBy?(model: string): void;
}

export interface ModelCallOptions<Extra> {
  metered: boolean;
  /** The workflow's trace: each attempt is appended. */
  attempts: Attempt[];
  /** The ledger's key base (the calling workflow's id). */
  workflowId: string;
  /** Number of this call's first attempt (a chat turn's later rounds continue the numbering). Default 1. */
  firstAttempt?: number;
  /** Passed to every attempt (stream position, whether to assemble a streamed message). */
  extra?: Extra;
}

export type ModelCallResult<Answer extends AttemptAnswer> = Extract<Answer, { outcome: 'succeeded' }> & {
  candidate: Candidate;
  /** The number the next attempt of this workflow takes. */
  nextAttempt: number;
};

export async function callWithFailover<Extra extends object, Answer extends AttemptAnswer>(
  input: CompletionInput,
  options: ModelCallOptions<Extra>,
  steps: ModelCallSteps<Extra, Answer>,
): Promise<ModelCallResult<Answer>> {
  const { candidates } = input;
  const { metered, attempts, workflowId } = options;
  const firstAttempt = options.firstAttempt ?? 1;
  // The provider call settles or releases its credits itself; these durable steps finish what it could not.
  const release = async (attempt: number, done: boolean | undefined) => {
    if (metered && !done) await steps.release({ userId: input.userId, workflowId, attempt });
  };
  let lastRetryAfter: number | undefined;
  let shortOfCredits = false;
  for (const [index, candidate] of candidates.entries()) {
    const attempt = firstAttempt + index;
    try {
      const result = await steps.call({
        requestId: input.requestId,
        attempt,
        ...(index > 0 ? { failover: true } : {}),
        candidate,
        request: input.request,
        userId: input.userId,
        metered,
        ...(options.extra as Extra),
      });
      if (result.outcome === 'skipped') {
        shortOfCredits ||= !!result.insufficientCredits;
        lastRetryAfter = result.retryAfterSeconds ?? lastRetryAfter;
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
      if (candidate.model !== input.request.model) steps.servedBy?.(candidate.model);
      // The stream's end first, so that its readers see it whole before anything else is recorded.
      const { journalTail, ...answer } = result;
      if (journalTail?.length) await steps.journal({ requestId: input.requestId, events: journalTail });
      if (metered && candidate.creditRate !== undefined && !result.ledgerDone) {
        await steps.settle({
          userId: input.userId,
          workflowId,
          attempt,
          model: candidate.model,
          creditRate: candidate.creditRate,
          usage: result.usage,
          usageEstimated: result.usageEstimated,
        });
      }
      // The tail stays out of the result (its events are in the attempt's marker, and now in the journal).
      const served = answer as Extract<Answer, { outcome: 'succeeded' }>;
      return { ...served, candidate, nextAttempt: firstAttempt + candidates.length };
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

/** Statuses that say a provider is saturated rather than failing (too many requests, overloaded). */
const saturatedStatuses = new Set([429, 503, 529]);

/**
 * Every attempt found its provider saturated (429, 503, 529), its circuit open, or its limits down to the reserve a
 * batch leaves (`rate limit reserve`): capacity, not the request, was missing. A job nobody waits on waits for capacity
 * then (docs/capacity-queue.md) instead of failing.
 */
export function allSaturated(attempts: Attempt[]): boolean {
  return (
    attempts.length > 0 &&
    attempts.every((attempt) =>
      attempt.outcome === 'skipped'
        ? /circuit open|rate limit reserve/.test(attempt.error ?? '')
        : attempt.outcome === 'failed' && attempt.status !== undefined && saturatedStatuses.has(attempt.status),
    )
  );
}
