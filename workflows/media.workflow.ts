/**
 * mediaJob: one synchronous media job (`media-<kind>-<id>`: tts, speech, image, remove-bg, upscale, ocr, sfx, stt),
 * started eagerly by the API, which has already held the job's credits and stored any input file. One local activity
 * runs the kind's engines with fallback, stores the outputs and charges the hold; the engine that served is then
 * written to the `TesseraModel` search attribute, so the Temporal UI finds jobs by engine. When it fails, the failure
 * is recorded and the hold released (a saga step retried until the database answers) and the workflow fails with the
 * error type the API renders: `invalid_request` when an engine refused the input, `upstream_error` when every engine
 * failed.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyLocalActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { MediaActivities } from '../activities/media/media-activities.ts';
import type { MediaFailureDetails, MediaJobInput, MediaJobResult } from '../common/media.ts';
import { untilStoresAnswer } from '../common/retry-policies.ts';
import { modelKey } from '../common/search-attributes.ts';

// Fallback between engines happens inside the activity; a second try would only repeat it. An outage of the
// platform's own stores (its database, the media store) is waited out (common/retry-policies.ts).
const { runMediaJob } = proxyLocalActivities<MediaActivities>({
  startToCloseTimeout: '150s',
  retry: untilStoresAnswer,
});

const { failMediaJob } = proxyLocalActivities<MediaActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function mediaJob(input: MediaJobInput): Promise<MediaJobResult> {
  try {
    const result = await runMediaJob(input);
    upsertSearchAttributes([{ key: modelKey, value: result.engine }]);
    return result;
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const engineFailure = cause instanceof ApplicationFailure && cause.type === 'MediaEngineError';
    const details = engineFailure ? (cause.details?.[0] as MediaFailureDetails | undefined) : undefined;
    const message = cause instanceof Error ? cause.message : String(cause);
    await failMediaJob({ ...input, error: message });
    throw ApplicationFailure.create({
      type: engineFailure && details && !details.retryable ? 'invalid_request' : 'upstream_error',
      message: `The ${input.work.kind} job failed: ${message}`,
      nonRetryable: true,
    });
  }
}
