/**
 * mediaVideo and mediaMusic: one asynchronous media job (`media-video-<id>`, `media-music-<id>`), started by the API
 * (which wrote the row, `queued` for a video and `processing` for music, and held the credits) and answered at once.
 * The provider's job is created (row `processing`), then polled after a durable timer of `pollIntervalMs` until it
 * ends; a succeeded output is stored as a media file (row `completed`, credits charged), a failure is recorded (row
 * `failed`, hold released). Every move is an activity, so each shows in history, and each activity is idempotent by
 * the job id. Polls are retried with backoff on retryable engine errors; a job still running after `maxWaitMs` is
 * failed as timed out (the provider's job is left to end on its own).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { AsyncJobActivities } from '../activities/media/async-job-activities.ts';
import type { AsyncJobInput, JobPoll } from '../common/media.ts';

const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8 };

const short = proxyActivities<AsyncJobActivities>({ startToCloseTimeout: '60s', retry });

// Downloading an output may take a while.
const { storeVideoOutput, storeMusicOutput } = proxyActivities<AsyncJobActivities>({
  startToCloseTimeout: '10m',
  retry,
});

// Recording the failure must happen: retried until the database answers.
const { failVideoJob, failMusicJob } = proxyActivities<AsyncJobActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** How long a provider's job may run before the media job gives up on it. */
const maxWaitMs = 2 * 60 * 60 * 1000;

interface Steps {
  create(input: AsyncJobInput): Promise<string>;
  poll(input: AsyncJobInput, providerJobId: string): Promise<JobPoll>;
  store(input: AsyncJobInput, output: { url: string } | { fileName: string }): Promise<string>;
  fail(input: AsyncJobInput, error: string): Promise<void>;
}

export function mediaVideo(input: AsyncJobInput): Promise<{ fileName: string }> {
  return runJob(input, {
    create: short.createVideoPrediction,
    poll: short.pollVideoPrediction,
    store: storeVideoOutput,
    fail: failVideoJob,
  });
}

export function mediaMusic(input: AsyncJobInput): Promise<{ fileName: string }> {
  return runJob(input, {
    create: short.createMusicPrediction,
    poll: short.pollMusicPrediction,
    store: storeMusicOutput,
    fail: failMusicJob,
  });
}

async function runJob(input: AsyncJobInput, steps: Steps): Promise<{ fileName: string }> {
  try {
    const providerJobId = await steps.create(input);
    const started = workflowInfo().runStartTime.getTime();
    for (;;) {
      await sleep(input.pollIntervalMs);
      const polled = await steps.poll(input, providerJobId);
      if (polled.status === 'succeeded') return { fileName: await steps.store(input, polled.output) };
      if (polled.status === 'failed') throw ApplicationFailure.nonRetryable(polled.error, 'MediaEngineError');
      if (Date.now() - started > maxWaitMs) {
        throw ApplicationFailure.nonRetryable(`no output after ${maxWaitMs / 60_000} minutes`, 'MediaEngineError');
      }
    }
  } catch (error) {
    const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    await steps.fail(input, message);
    throw ApplicationFailure.nonRetryable(`The ${input.kind} job failed: ${message}`, 'upstream_error');
  }
}
