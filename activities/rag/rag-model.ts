/**
 * The embedding model the RAG index uses (RAG_EMBEDDING_MODEL, else the embedding service's default: the local
 * engine when no provider key is set), checked once at start-up: its vectors must be 512 long (the index's size,
 * ./rag-store.ts), natively or by asking the model for shorter ones. Each document records the model it was indexed
 * with, and search embeds the query with the model configured now, matching only documents indexed with it: after
 * changing the model, files are indexed again (`POST /rag/index`) to be found.
 */
import { resolveEmbeddingModel, type Catalogue } from '../../common/catalogue.ts';
import { ragDimensions } from './rag-store.ts';

/** The local engine's catalogue id (config/models.yaml): needs no key, so it is always there. */
export const localEmbeddingModelId = 'local-embedding';

export interface RagModel {
  id: string;
  /** What to ask the model for: nothing when its vectors are already the index's size. */
  request: { dimensions?: number };
}

export function ragModelOf(catalogue: Catalogue, configured: string | undefined, fallback: string): RagModel {
  const id = configured ?? fallback;
  const model = resolveEmbeddingModel(catalogue, id);
  if (!model) throw new Error(`RAG_EMBEDDING_MODEL names no embedding model of the catalogue: ${id}`);
  if (model.dimensions === ragDimensions) return { id, request: {} };
  if (model.shortenable && (model.dimensions === null || model.dimensions > ragDimensions)) {
    return { id, request: { dimensions: ragDimensions } };
  }
  throw new Error(
    `RAG_EMBEDDING_MODEL ${id} makes vectors of ${model.dimensions ?? 'unknown'} numbers and cannot shorten them to ` +
      `the index's ${ragDimensions}: choose a model that can (text-embedding-3-*, gemini-embedding-001, local-embedding)`,
  );
}
