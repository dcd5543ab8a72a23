/**
 * mediaSpeech: one speech job (`media-tts-<id>` for POST /api/v1/media/tts, `media-speech-<id>` for
 * POST /v1/audio/speech), started eagerly by the API, which has already held the job's credits. One local activity
 * runs the engines with fallback, stores the MP3 and charges the hold; when it fails, the failure is recorded and the
 * hold released (a saga step retried until the database answers) and the workflow fails with the error type the API
 * renders: `invalid_request` when an engine refused the input, `upstream_error` when every engine failed.
 */
import { ActivityFailure, ApplicationFailure, proxyLocalActivities } from '@temporalio/workflow';
import type { MediaActivities } from '../activities/media/media-activities.ts';
import type { MediaFailureDetails, SpeechJobInput, SpeechJobResult } from '../common/media.ts';

// Fallback between engines happens inside the activity; a second try would only repeat it.
const { synthesizeSpeech } = proxyLocalActivities<MediaActivities>({
  startToCloseTimeout: '120s',
  retry: { maximumAttempts: 1 },
});

const { failSpeechJob } = proxyLocalActivities<MediaActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function mediaSpeech(input: SpeechJobInput): Promise<SpeechJobResult> {
  try {
    return await synthesizeSpeech(input);
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const engineFailure = cause instanceof ApplicationFailure && cause.type === 'MediaEngineError';
    const details = engineFailure ? (cause.details?.[0] as MediaFailureDetails | undefined) : undefined;
    const message = cause instanceof Error ? cause.message : String(cause);
    await failSpeechJob({ ...input, error: message });
    throw ApplicationFailure.create({
      type: engineFailure && details && !details.retryable ? 'invalid_request' : 'upstream_error',
      message: `Speech failed: ${message}`,
      nonRetryable: true,
    });
  }
}
