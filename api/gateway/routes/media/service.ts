/**
 * Speech jobs through the API: the price held (402 when short), the job's workflow started eagerly (its local
 * activity runs in this process), its result awaited and the stored MP3 opened for the response. A start that fails
 * releases the hold; a job that fails has released it in its workflow.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { CreditLedger } from '../../../../activities/credits/credit-ledger.ts';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import { mediaWorkflowId, type SpeechJobInput, type SpeechJobResult } from '../../../../common/media.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import { kindKey, modelKey, userKey } from '../../../../common/search-attributes.ts';
import type { mediaSpeech } from '../../../../workflows/media.workflow.ts';
import { ApiError } from '../../../errors.ts';
import type { Principal } from '../../../services/apikeys/service.ts';

export interface MediaServiceDependencies {
  client: Client;
  taskQueue: string;
  ledger: CreditLedger;
  files: MediaFiles;
}

export type SpeechOrder = Omit<SpeechJobInput, 'jobId' | 'userId' | 'metered'>;

export class MediaService {
  private readonly dependencies: MediaServiceDependencies;

  constructor(dependencies: MediaServiceDependencies) {
    this.dependencies = dependencies;
  }

  async speak(principal: Principal, order: SpeechOrder) {
    const { client, taskQueue, ledger, files } = this.dependencies;
    const jobId = randomBytes(18).toString('base64url');
    const workflowId = mediaWorkflowId(order.kind, jobId);
    const userId = principal.userId;
    const metered = !principal.operator;
    if (metered) {
      const held = await ledger.reserve({
        userId,
        workflowId,
        attempt: 1,
        amount: order.credits,
        model: `media-${order.kind}`,
      });
      if (!held.ok) {
        throw new ApiError(
          'insufficient_credits',
          `This speech costs ${order.credits} credits; ${held.available} are available`,
        );
      }
    }
    const input: SpeechJobInput = { ...order, jobId, userId, metered };
    let result: SpeechJobResult;
    try {
      const handle = await client.workflow.start<typeof mediaSpeech>('mediaSpeech', {
        workflowId,
        taskQueue,
        args: [input],
        requestEagerStart: true,
        typedSearchAttributes: [
          { key: kindKey, value: `media-${order.kind}` },
          { key: userKey, value: userId },
          { key: modelKey, value: order.engines[0]?.engine ?? 'none' },
        ],
        staticSummary: `Speech (${order.kind}): ${order.text.length} characters, voice ${order.voice}, for ${userId}`,
      });
      result = await handle.result().catch((error: unknown) => {
        throw toApiError(error);
      });
    } catch (error) {
      // Not started: nothing will release the hold but this. Started: the workflow released it (this is a no-op).
      if (metered) await ledger.release({ userId, workflowId, attempt: 1 });
      throw error;
    }
    const file = await files.open(result.fileName);
    if (!file) throw new ApiError('internal_error', `The result file of speech job ${jobId} is missing`);
    return { ...result, file };
  }
}

function toApiError(error: unknown): ApiError {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
      return new ApiError(cause.type as ErrorType, cause.message);
    }
    cause = cause.cause;
  }
  return new ApiError('internal_error', `Speech failed: ${error instanceof Error ? error.message : String(error)}`);
}
