/**
 * ragIndex: one indexing of a file (or of text) for retrieval, workflow `rag-index-<document id>` (TesseraKind
 * `rag-index`). It reads the source in steps (a PDF 25 pages at a time; a table or an image in one streamed step),
 * writing chunks as it goes, then embeds the chunks a minute's worth at a time until none is left, then makes the
 * index searchable, replacing the file's earlier indexes. Every step is keyed and resumable
 * (activities/rag/rag-activities.ts): a worker killed mid-index resumes where it stopped, writing no chunk twice.
 * Only counts pass through the history, never text or vectors. A source that cannot be indexed, or an embedding
 * refused for the account, ends the index failed with the reason (`GET /rag/index/{id}` shows it).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { RagActivities } from '../activities/rag/rag-activities.ts';

const steps = proxyActivities<RagActivities>({
  startToCloseTimeout: '10 minutes',
  // Streaming and embedding steps heartbeat per batch: a lost worker's step is taken over within the minute.
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
});

/** Pages of a PDF read per step. */
export const pagesPerStep = 25;

export interface RagIndexInput {
  documentId: string;
  /** The language of an image's text (OCR): `en` or `ja`. */
  language: string;
}

export interface RagIndexResult {
  documentId: string;
  chunks: number;
}

export async function ragIndex(input: RagIndexInput): Promise<RagIndexResult> {
  const { documentId } = input;
  try {
    const plan = await steps.ragPlan({ documentId });
    if (plan.kind === 'pdf') {
      for (let from = 1; from <= plan.pages; from += pagesPerStep) {
        await steps.ragExtractPages({ documentId, from, to: Math.min(plan.pages, from + pagesPerStep - 1) });
      }
    } else if (plan.kind === 'stream') {
      await steps.ragExtractAll({ documentId, language: input.language });
    }
    const { total } = await steps.ragCount({ documentId });
    for (;;) {
      const { remaining } = await steps.ragEmbed({ documentId });
      if (remaining === 0) break;
    }
    await steps.ragFinish({ documentId });
    return { documentId, chunks: total };
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    await steps.ragFail({ documentId, error: message });
    if (cause instanceof ApplicationFailure) throw cause;
    throw error;
  }
}
