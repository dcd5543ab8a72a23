/**
 * Retrieval over a user's own documents (spec §4.9; docs/files-and-rag.md): indexing a file or a text as a
 * durable workflow (`ragIndex`, workflows/rag-index.workflow.ts), its status and progress, and vector search. The
 * index's tables and queries are activities/rag/rag-store.ts; embeddings go through the platform's one embedding
 * path (activities/embeddings/), metered to the user like `POST /v1/embeddings`.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { kindKey, userKey } from '../../../common/search-attributes.ts';
import { EmbeddingError, type EmbeddingService } from '../../../activities/embeddings/embedding-service.ts';
import { textChunks } from '../../../activities/rag/extract.ts';
import type { RagModel } from '../../../activities/rag/rag-model.ts';
import type { RagDocument, RagStore, SearchHit } from '../../../activities/rag/rag-store.ts';
import type { UploadStore } from '../../../activities/uploads/upload-store.ts';
import type { ragIndex } from '../../../workflows/rag-index.workflow.ts';
import { ApiError } from '../../errors.ts';

export interface RagServiceDependencies {
  rag: RagStore;
  uploads: UploadStore;
  embeddings: EmbeddingService;
  ragModel: RagModel;
  client: Client;
  taskQueue: string;
}

export const ragIndexWorkflowId = (documentId: string) => `rag-index-${documentId}`;

/** What an index looks like to a client. */
export function presentIndex(document: RagDocument) {
  return {
    id: document.id,
    object: 'rag.index',
    status: document.status,
    file_id: document.fileId,
    title: document.title,
    model: document.model,
    progress: { chunks_done: document.chunksDone, chunks_total: document.chunksTotal },
    error: document.error,
    workflow_id: ragIndexWorkflowId(document.id),
    created_at: document.createdAt.toISOString(),
    finished_at: document.finishedAt?.toISOString() ?? null,
  };
}

export function presentHit(hit: SearchHit) {
  return {
    text: hit.text,
    score: hit.score,
    file_id: hit.fileId,
    title: hit.title,
    index_id: hit.documentId,
    location: hit.location,
  };
}

export class RagService {
  private readonly dependencies: RagServiceDependencies;

  constructor(dependencies: RagServiceDependencies) {
    this.dependencies = dependencies;
  }

  /** Starts indexing the user's file, or a text, and answers the index as it starts (`queued`). */
  async index(
    userId: string,
    request: { file_id?: string; text?: string; title?: string; language: string },
  ): Promise<RagDocument> {
    const { rag, uploads, ragModel, client, taskQueue } = this.dependencies;
    const id = `idx_${randomBytes(12).toString('base64url')}`;
    let document: RagDocument;
    if (request.file_id) {
      const file = await uploads.get(userId, request.file_id);
      if (!file) throw new ApiError('not_found', `No file ${request.file_id}`, { param: 'file_id' });
      document = await rag.createDocument({
        id,
        userId,
        fileId: file.id,
        title: request.title ?? file.fileName,
        source: 'file',
        model: ragModel.id,
      });
    } else {
      const chunks = textChunks(request.text!);
      if (chunks.length === 0) throw new ApiError('invalid_request', 'text has nothing to index', { param: 'text' });
      document = await rag.createDocument({
        id,
        userId,
        fileId: null,
        title: request.title!,
        source: 'text',
        model: ragModel.id,
      });
      // A text's chunks are written here (the text never enters the workflow's history); the workflow embeds them.
      await rag.writeChunks(document, chunks);
    }
    try {
      await client.workflow.start<typeof ragIndex>('ragIndex', {
        workflowId: ragIndexWorkflowId(id),
        taskQueue,
        args: [{ documentId: id, language: request.language }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          { key: kindKey, value: 'rag-index' },
          { key: userKey, value: userId },
        ],
        staticSummary: `Index ${document.title} (${document.fileId ?? 'text'}) for ${userId}`,
      });
    } catch (error) {
      await rag.fail(id, `the index could not start: ${(error as Error).message}`);
      throw error;
    }
    return document;
  }

  async status(userId: string, id: string): Promise<RagDocument> {
    const document = await this.dependencies.rag.document(userId, id);
    if (!document) throw new ApiError('not_found', `No index ${id}`, { param: 'index_id' });
    return document;
  }

  async list(userId: string): Promise<RagDocument[]> {
    return this.dependencies.rag.documents(userId);
  }

  /** The user's chunks nearest the query; a file id narrows to one of the user's files. */
  async search(userId: string, query: { q: string; k: number; fileId?: string }): Promise<SearchHit[]> {
    const { rag, uploads, embeddings, ragModel } = this.dependencies;
    if (query.fileId && !(await uploads.get(userId, query.fileId))) {
      throw new ApiError('not_found', `No file ${query.fileId}`, { param: 'file_id' });
    }
    let vector: Float32Array;
    try {
      const { vectors } = await embeddings.embedQuery({
        userId,
        model: ragModel.id,
        texts: [query.q],
        ...ragModel.request,
      });
      vector = vectors[0]!;
    } catch (error) {
      if (error instanceof EmbeddingError) {
        throw new ApiError(error.type, `The query could not be embedded: ${error.message}`, {
          ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
          ...(error.requiredPlan !== undefined ? { requiredPlan: error.requiredPlan } : {}),
        });
      }
      throw error;
    }
    return rag.search(userId, vector, {
      model: ragModel.id,
      k: query.k,
      ...(query.fileId ? { fileId: query.fileId } : {}),
    });
  }

  /** Each file's newest index, for the file listing. */
  async describeFiles(userId: string, fileIds: string[]): Promise<Map<string, Record<string, unknown>>> {
    const latest = await this.dependencies.rag.latestForFiles(userId, fileIds);
    return new Map([...latest].map(([fileId, document]) => [fileId, { index: presentIndex(document) }]));
  }
}
