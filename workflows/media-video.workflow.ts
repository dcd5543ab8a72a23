/**
 * mediaVideo: one video job (`media-video-<id>`), started by the API (which wrote the row `queued` and held the
 * credits) and answered with 202 at once. The provider's job is created (row `processing`), then polled after a
 * durable timer of `pollIntervalMs` until it ends; a succeeded output is stored as a media file (row `completed`,
 * credits charged), a failure is recorded (row `failed`, hold released). Every move is an activity, so each shows in
 * history, and each activity is idempotent by the job id. Polls are retried with backoff on retryable engine
 * errors; a job still running after `maxWaitMs` is failed as timed out.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { VideoActivities } from '../activities/media/video-activities.ts';
import type { VideoJobInput } from '../common/media.ts';

const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8 };

const { createVideoPrediction, pollVideoPrediction } = proxyActivities<VideoActivities>({
  startToCloseTimeout: '60s',
  retry,
});

// Downloading a video may take a while.
const { storeVideoOutput } = proxyActivities<VideoActivities>({ startToCloseTimeout: '10m', retry });

// Recording the failure must happen: retried until the database answers.
const { failVideoJob } = proxyActivities<VideoActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** How long a provider's job may run before the video job gives up on it. */
const maxWaitMs = 2 * 60 * 60 * 1000;

export async function mediaVideo(input: VideoJobInput): Promise<{ fileName: string }> {
  try {
    const providerJobId = await createVideoPrediction(input);
    const started = workflowInfo().runStartTime.getTime();
    for (;;) {
      await sleep(input.pollIntervalMs);
      const polled = await pollVideoPrediction(input, providerJobId);
      if (polled.status === 'succeeded') return { fileName: await storeVideoOutput(input, polled.output) };
      if (polled.status === 'failed') throw ApplicationFailure.nonRetryable(polled.error, 'MediaEngineError');
      if (Date.now() - started > maxWaitMs) {
        throw ApplicationFailure.nonRetryable(`no video after ${maxWaitMs / 60_000} minutes`, 'MediaEngineError');
      }
    }
  } catch (error) {
    const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    await failVideoJob(input, message);
    throw ApplicationFailure.nonRetryable(`Video failed: ${message}`, 'upstream_error');
  }
}
