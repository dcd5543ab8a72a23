/**
 * mediaVideo and mediaMusic: one asynchronous media job (`media-video-<id>`, `media-music-<id>`), started by the API
 * (which wrote the row, `queued` for a video and `processing` for music, and held the credits) and answered at once.
 * The provider's job is created (row `processing`), then polled after a durable timer of `pollIntervalMs` until it
 * ends; a succeeded output is stored as a media file (row `completed`, credits charged), a failure is recorded (row
 * `failed`, hold released). Every move is an activity, so each shows in history, and each activity is idempotent by
 * the job id. Polls are retried with backoff on retryable engine errors; a job still running after `maxWaitMs` is
 * failed as timed out (the provider's job is left to end on its own).
 *
 * Cancellation (`DELETE /api/v1/media/{video|music}/{id}`) is the `cancelMediaJob` update, refused unless the caller
 * owns the job and it has not ended. The timer between polls wakes at once for it; the provider's job is cancelled,
 * the row marked `cancelled` and the hold released, and the update answers once that is written. A cancel racing
 * the job's own end: exactly one wins, decided here, in the workflow's one thread of events. The job is decided
 * `completed` the moment a poll reports the provider's success (from then a cancel is refused with `conflict`, even
 * while the output is still being stored: the provider did the work and the caller gets it, charged), and
 * `cancelled` the moment the workflow sees the request before that (a success the provider reports afterwards is
 * discarded, refunded). A create or poll in flight when the cancel arrives is abandoned, not awaited (its retries
 * could hold the DELETE for minutes): whichever of its answer and the cancel the workflow sees first decides. The
 * row's guards (an end is written only from `queued` or `processing`) back this up.
 *
 * When the job has a callback URL, it is then POSTed once (activities/media/callbacks.ts), retried with backoff up to
 * `callback.maxAttempts`; a callback that cannot be delivered is recorded on the row and does not fail the job.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineUpdate,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/common';
import type { AsyncJobActivities } from '../activities/media/async-job-activities.ts';
import type { CallbackActivities } from '../activities/media/callbacks.ts';
import type { AsyncJobInput, AsyncJobOutcome, CancelJobRequest, JobPoll } from '../common/media.ts';

/** Cancels the job (see the file comment); answers once the row says `cancelled`. */
export const cancelMediaJobUpdate = defineUpdate<{ status: 'cancelled' }, [CancelJobRequest]>('cancelMediaJob');

const retry: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8 };

// Every step heartbeats every 5 s while it runs (activities/heartbeat.ts's keepAlive), so an attempt lost with its
// worker (or a task that never reached one) is retried after the 15 s heartbeat timeout rather than after its whole
// start-to-close timeout: a worker killed under a video job held the job (and its credits) a minute longer before.
const short = proxyActivities<AsyncJobActivities>({ startToCloseTimeout: '60s', heartbeatTimeout: '15s', retry });

// Downloading an output may take a while.
const { storeVideoOutput, storeMusicOutput } = proxyActivities<AsyncJobActivities>({
  startToCloseTimeout: '10m',
  heartbeatTimeout: '15s',
  retry,
});

// Recording the end must happen: retried until the database answers.
const { failVideoJob, failMusicJob, cancelVideoJob, cancelMusicJob } = proxyActivities<AsyncJobActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});
const { mediaJobCallbackGaveUp } = proxyActivities<CallbackActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

// Cancelling at the provider is worth a few tries, not more: the job is cancelled and refunded here either way.
const { cancelVideoPrediction, cancelMusicPrediction } = proxyActivities<AsyncJobActivities>({
  startToCloseTimeout: '30s',
  retry: { ...retry, maximumAttempts: 4 },
});

/** How long a provider's job may run before the media job gives up on it. */
const maxWaitMs = 2 * 60 * 60 * 1000;

interface Steps {
  create(input: AsyncJobInput): Promise<string>;
  poll(input: AsyncJobInput, providerJobId: string): Promise<JobPoll>;
  store(input: AsyncJobInput, output: { url: string } | { fileName: string }): Promise<string>;
  fail(input: AsyncJobInput, error: string): Promise<void>;
  cancelPrediction(input: AsyncJobInput, providerJobId: string): Promise<void>;
  cancelJob(input: AsyncJobInput): Promise<void>;
}

export function mediaVideo(input: AsyncJobInput): Promise<AsyncJobOutcome> {
  return runJob(input, {
    create: short.createVideoPrediction,
    poll: short.pollVideoPrediction,
    store: storeVideoOutput,
    fail: failVideoJob,
    cancelPrediction: cancelVideoPrediction,
    cancelJob: cancelVideoJob,
  });
}

export function mediaMusic(input: AsyncJobInput): Promise<AsyncJobOutcome> {
  return runJob(input, {
    create: short.createMusicPrediction,
    poll: short.pollMusicPrediction,
    store: storeMusicOutput,
    fail: failMusicJob,
    cancelPrediction: cancelMusicPrediction,
    cancelJob: cancelMusicJob,
  });
}

type End = 'completed' | 'failed' | 'cancelled';

async function runJob(input: AsyncJobInput, steps: Steps): Promise<AsyncJobOutcome> {
  let cancelRequest: CancelJobRequest | undefined;
  /** How the job ends, once decided (the race rule in the file comment); `ended` once the row says so. */
  let decided: End | undefined;
  // Written once, below; read earlier by the update handler's wait (so declared, and initialized, up here).
  let ended: End | undefined = undefined;
  const alreadyEnded = () =>
    ApplicationFailure.create({
      type: 'conflict',
      message: `The ${input.kind} job has already ${decided === 'completed' ? 'completed' : `ended (${decided})`}`,
      nonRetryable: true,
    });
  setHandler(
    cancelMediaJobUpdate,
    async (request) => {
      cancelRequest ??= request;
      await condition(() => ended !== undefined);
      if (decided !== 'cancelled') throw alreadyEnded();
      return { status: 'cancelled' as const };
    },
    {
      validator: (request) => {
        if (request.by !== input.userId) {
          throw ApplicationFailure.create({ type: 'not_found', message: `No such ${input.kind} job` });
        }
        if (decided !== undefined) throw alreadyEnded();
      },
    },
  );

  const cancel = async (providerJobId?: string): Promise<AsyncJobOutcome> => {
    decided = 'cancelled';
    if (providerJobId !== undefined) {
      try {
        await steps.cancelPrediction(input, providerJobId);
      } catch {
        // The provider's job is left to end on its own: ours is cancelled and refunded all the same.
      }
    }
    await steps.cancelJob(input);
    return { status: 'cancelled' };
  };

  /**
   * Runs one activity unless a cancel comes first: then the activity is abandoned (its retries may take minutes, and
   * the DELETE waits for the job to be cancelled) and `undefined` answered. A `create` still running then finds the
   * row cancelled and cancels the provider's job it started itself.
   */
  const unlessCancelled = async <T>(work: () => Promise<T>): Promise<T | undefined> => {
    if (cancelRequest) return undefined;
    const scope = new CancellationScope();
    const done = scope.run(work);
    const first = await Promise.race([
      done.then((value) => ({ value })),
      condition(() => cancelRequest !== undefined).then(() => undefined),
    ]);
    if (first !== undefined) return first.value;
    done.catch(() => undefined); // its cancellation (or a late failure) is not this workflow's failure
    scope.cancel();
    return undefined;
  };

  const produce = async (): Promise<AsyncJobOutcome> => {
    const providerJobId = await unlessCancelled(() => steps.create(input));
    if (providerJobId === undefined) return cancel();
    const started = workflowInfo().runStartTime.getTime();
    for (;;) {
      // The wait between polls, cut short by a cancel.
      if (await condition(() => cancelRequest !== undefined, input.pollIntervalMs)) return cancel(providerJobId);
      const polled = await unlessCancelled(() => steps.poll(input, providerJobId));
      if (polled === undefined) return cancel(providerJobId);
      if (polled.status === 'succeeded') {
        decided = 'completed';
        return { status: 'completed', fileName: await steps.store(input, polled.output) };
      }
      if (polled.status === 'failed') throw ApplicationFailure.nonRetryable(polled.error, 'MediaEngineError');
      if (Date.now() - started > maxWaitMs) {
        throw ApplicationFailure.nonRetryable(`no output after ${maxWaitMs / 60_000} minutes`, 'MediaEngineError');
      }
    }
  };

  let outcome: AsyncJobOutcome | undefined;
  let failure: string | undefined;
  try {
    outcome = await produce();
  } catch (error) {
    const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    failure = cause instanceof Error ? cause.message : String(cause);
    decided = 'failed';
    await steps.fail(input, failure);
  }
  ended = decided;
  await callBack(input);
  if (outcome === undefined) {
    throw ApplicationFailure.nonRetryable(`The ${input.kind} job failed: ${failure}`, 'upstream_error');
  }
  return outcome;
}

/** Delivers the job's callback, if it has one; one that cannot be delivered is recorded, never thrown. */
async function callBack(input: AsyncJobInput): Promise<void> {
  if (!input.callback) return;
  const { deliverMediaJobCallback } = proxyActivities<CallbackActivities>({
    startToCloseTimeout: '30s',
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 3,
      maximumInterval: '10m',
      maximumAttempts: input.callback.maxAttempts,
      nonRetryableErrorTypes: ['CallbackRefused'],
    },
  });
  try {
    await deliverMediaJobCallback(input.jobId);
  } catch (error) {
    const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    await mediaJobCallbackGaveUp(input.jobId, cause instanceof Error ? cause.message : String(cause));
  }
}
