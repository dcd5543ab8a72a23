/**
 * The RAG indexing workflow's activities (workflows/rag-index.workflow.ts). Each step is keyed, so a retry, or a
 * worker killed halfway and the step run again elsewhere, writes nothing twice: chunks by their position, vectors by
 * filling a null. No text passes through workflow history: the steps read the upload from the store and write chunks
 * to the database, and answer counts.
 *
 * A source that cannot be indexed (a PDF without a text layer, an unreadable workbook, a file deleted meanwhile) and
 * an embedding refused for the account (no credits, a model outside its plan) end the index with that reason
 * (non-retryable); anything else (the database, a provider) is retried.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { heartbeat } from '../heartbeat.ts';
import { EmbeddingError, type EmbeddingService } from '../embeddings/embedding-service.ts';
import type { MediaServices } from '../media/media-activities.ts';
import { EngineError } from '../media/engine.ts';
import { UnreadableTable } from '../uploads/table-rows.ts';
import type { OpenedUpload, UploadStore } from '../uploads/upload-store.ts';
import { ExtractionError, imageChunks, pdfChunks, pdfPageCount, tableChunks } from './extract.ts';
import type { RagModel } from './rag-model.ts';
import { ragDimensions, type RagDocument, type RagStore } from './rag-store.ts';

export interface RagActivityDependencies {
  rag: RagStore;
  uploads: Pick<UploadStore, 'open'>;
  embeddings: EmbeddingService;
  /** The model new indexes use and what to ask it for (./rag-model.ts). */
  ragModel: RagModel;
  media: Pick<MediaServices, 'ocr' | 'breaker'>;
}

export type IndexPlan = { kind: 'pdf'; pages: number } | { kind: 'stream' } | { kind: 'ready' };

/** Chunks embedded per call to the embedding service. */
const embedBatch = 64;
/** An embedding step returns after this long (the workflow calls it again): progress shows in its history. */
const embedStepMs = 60_000;
/** Error types of the embedding service that retrying cannot change. */
const finalEmbeddingErrors = new Set([
  'invalid_request',
  'model_not_found',
  'permission_denied',
  'insufficient_credits',
]);

export function createRagActivities(dependencies: RagActivityDependencies) {
  const { rag, uploads, embeddings } = dependencies;

  const documentOf = async (documentId: string): Promise<RagDocument> => {
    const document = await rag.documentById(documentId);
    if (!document) throw ApplicationFailure.nonRetryable('The index was deleted (its file was deleted)', 'not_found');
    return document;
  };
  const uploadOf = async (document: RagDocument): Promise<OpenedUpload> => {
    const upload = document.fileId ? await uploads.open(document.userId, document.fileId) : null;
    if (!upload) throw ApplicationFailure.nonRetryable(`The file ${document.fileId} was deleted`, 'not_found');
    return upload;
  };
  /** A failure that retrying cannot change, as the index's final error; anything else is thrown for a retry. */
  const final = (error: unknown): never => {
    if (error instanceof ExtractionError || error instanceof UnreadableTable) {
      throw ApplicationFailure.nonRetryable(error.message, 'invalid_request');
    }
    if (error instanceof EngineError && !error.retryable) {
      throw ApplicationFailure.nonRetryable(`the image's text cannot be read: ${error.message}`, 'invalid_request');
    }
    if (error instanceof EmbeddingError && finalEmbeddingErrors.has(error.type)) {
      throw ApplicationFailure.nonRetryable(`embedding refused: ${error.message}`, error.type);
    }
    if ((error as { code?: string }).code === '23503') {
      // A chunk of a document deleted meanwhile (its file was deleted): nothing left to index.
      throw ApplicationFailure.nonRetryable('The file was deleted while it was being indexed', 'not_found');
    }
    throw error;
  };

  return {
    /** What the source needs: a PDF's pages are read in ranges; a table or image in one streamed step. */
    async ragPlan(input: { documentId: string }): Promise<IndexPlan> {
      const document = await documentOf(input.documentId);
      if (document.source === 'text') return { kind: 'ready' };
      await rag.setStatus(document.id, 'extracting');
      const upload = await uploadOf(document);
      try {
        if (upload.kind === 'pdf') return { kind: 'pdf', pages: await pdfPageCount(upload) };
        return { kind: 'stream' };
      } catch (error) {
        return final(error);
      }
    },

    /** Chunks of PDF pages `from`..`to`. */
    async ragExtractPages(input: { documentId: string; from: number; to: number }): Promise<{ chunks: number }> {
      const document = await documentOf(input.documentId);
      try {
        const chunks = await pdfChunks(await uploadOf(document), input.from, input.to);
        await rag.writeChunks(document, chunks);
        return { chunks: chunks.length };
      } catch (error) {
        return final(error);
      }
    },

    /** A table's or an image's chunks, streamed in batches (heartbeating: a lost worker's step is retried soon). */
    async ragExtractAll(input: { documentId: string; language: string }): Promise<{ chunks: number }> {
      const document = await documentOf(input.documentId);
      const upload = await uploadOf(document);
      try {
        if (upload.kind === 'csv' || upload.kind === 'xlsx') {
          const { chunks } = await tableChunks(upload, async (batch) => {
            await rag.writeChunks(document, batch);
            heartbeat({ chunks: batch.at(-1)!.seq + 1 });
          });
          return { chunks };
        }
        const chunks = await imageChunks(upload, {
          // The standard OCR tier of the media API: local Tesseract in the language asked (en or ja), no hosted
          // vision model (it would bill an outside provider for every indexed image).
          engines: [...dependencies.media.ocr.values()].filter((engine) => engine.id === 'tesseract'),
          breaker: dependencies.media.breaker,
          language: input.language,
        });
        await rag.writeChunks(document, chunks);
        return { chunks: chunks.length };
      } catch (error) {
        return final(error);
      }
    },

    /** Counts the chunks written and moves the index to embedding; an index with no chunks ends here. */
    async ragCount(input: { documentId: string }): Promise<{ total: number }> {
      const total = await rag.chunkCount(input.documentId);
      if (total === 0) {
        throw ApplicationFailure.nonRetryable(
          'No text was found to index (a scanned PDF without a text layer, an empty table or an image without text)',
          'invalid_request',
        );
      }
      await rag.setStatus(input.documentId, 'embedding', { chunksTotal: total });
      return { total };
    },

    /**
     * Embeds chunks without a vector, a batch at a time, for up to a minute; answers how many are left. Resumes where
     * any earlier try stopped.
     */
    async ragEmbed(input: { documentId: string }): Promise<{ done: number; remaining: number }> {
      const document = await documentOf(input.documentId);
      const started = Date.now();
      let done = document.chunksDone;
      for (;;) {
        const batch = await rag.unembedded(document.id, embedBatch);
        if (batch.length === 0) return { done, remaining: 0 };
        if (Date.now() - started > embedStepMs) return { done, remaining: batch.length };
        try {
          const { vectors } = await embeddings.embed({
            userId: document.userId,
            model: document.model,
            texts: batch.map((chunk) => chunk.text),
            // A document keeps the model it was indexed with; the size asked of it is the index's (./rag-model.ts).
            ...(document.model === dependencies.ragModel.id
              ? dependencies.ragModel.request
              : { dimensions: ragDimensions }),
          });
          done = await rag.storeEmbeddings(
            document.id,
            batch.map((chunk, index) => ({ seq: chunk.seq, vector: vectors[index]! })),
          );
        } catch (error) {
          return final(error);
        }
        heartbeat({ done });
      }
    },

    /** Makes the index searchable, replacing the file's earlier indexes. */
    async ragFinish(input: { documentId: string }): Promise<{ done: boolean }> {
      return { done: await rag.finish(input.documentId) };
    },

    /** Records why the index ended without finishing. */
    async ragFail(input: { documentId: string; error: string }): Promise<void> {
      await rag.fail(input.documentId, input.error);
    },
  };
}

export type RagActivities = ReturnType<typeof createRagActivities>;
