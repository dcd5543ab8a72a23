/**
 * The RAG index's tables (migration `rag`): documents (one indexing of a file or a text, with its status and
 * progress) and their chunks (text, location, vector). One implementation, used by the indexing activities, the
 * search route and the `rag_search` tool. Plain SQL over the pg pool.
 *
 * Writes are keyed so that a retried or resumed step changes nothing twice: a chunk by (document, position), an
 * embedding by filling a null. A document becomes searchable when it is `done`; finishing it also deletes the
 * documents it replaces (earlier indexings of the same file), in one transaction, so a re-index swaps the file's
 * chunks at once and a search never sees both or neither.
 */
import type { Pool } from '../../db/pool.ts';

/** Where a chunk came from in its source: a PDF page, a range of table rows, an image's text, or plain text. */
export type ChunkLocation =
  | { kind: 'page'; page: number }
  | { kind: 'rows'; rows: [number, number]; sheet?: string }
  | { kind: 'image' }
  | { kind: 'text' };

export type DocumentStatus = 'queued' | 'extracting' | 'embedding' | 'done' | 'failed';

export interface RagDocument {
  id: string;
  userId: string;
  fileId: string | null;
  title: string;
  source: 'file' | 'text';
  status: DocumentStatus;
  model: string;
  chunksTotal: number | null;
  chunksDone: number;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface NewChunk {
  seq: number;
  text: string;
  location: ChunkLocation;
}

export interface SearchHit {
  text: string;
  /** Cosine similarity, 1 the same direction, 0 unrelated. */
  score: number;
  documentId: string;
  fileId: string | null;
  title: string;
  location: ChunkLocation;
}

/** The platform's one RAG vector size (see the migration). */
export const ragDimensions = 512;

interface DocumentRow {
  id: string;
  user_id: string;
  file_id: string | null;
  title: string;
  source: 'file' | 'text';
  status: DocumentStatus;
  model: string;
  chunks_total: number | null;
  chunks_done: number;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export class RagStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async createDocument(document: {
    id: string;
    userId: string;
    fileId: string | null;
    title: string;
    source: 'file' | 'text';
    model: string;
  }): Promise<RagDocument> {
    const { rows } = await this.pool.query<DocumentRow>(
      `insert into rag_documents (id, user_id, file_id, title, source, status, model)
       values ($1, $2, $3, $4, $5, 'queued', $6) returning *`,
      [document.id, document.userId, document.fileId, document.title, document.source, document.model],
    );
    return toDocument(rows[0]!);
  }

  /** The user's document (another user's is absent). */
  async document(userId: string, id: string): Promise<RagDocument | null> {
    const { rows } = await this.pool.query<DocumentRow>('select * from rag_documents where id = $1 and user_id = $2', [
      id,
      userId,
    ]);
    return rows[0] ? toDocument(rows[0]) : null;
  }

  /** A document by id alone, for its own indexing workflow. */
  async documentById(id: string): Promise<RagDocument | null> {
    const { rows } = await this.pool.query<DocumentRow>('select * from rag_documents where id = $1', [id]);
    return rows[0] ? toDocument(rows[0]) : null;
  }

  /** The user's documents, newest first. */
  async documents(userId: string, limit = 100): Promise<RagDocument[]> {
    const { rows } = await this.pool.query<DocumentRow>(
      'select * from rag_documents where user_id = $1 order by created_at desc, id desc limit $2',
      [userId, limit],
    );
    return rows.map(toDocument);
  }

  /** The newest document of each of these files (their index status, for the file listing). */
  async latestForFiles(userId: string, fileIds: string[]): Promise<Map<string, RagDocument>> {
    if (fileIds.length === 0) return new Map();
    const { rows } = await this.pool.query<DocumentRow>(
      `select distinct on (file_id) * from rag_documents where user_id = $1 and file_id = any($2::text[])
       order by file_id, created_at desc, id desc`,
      [userId, fileIds],
    );
    return new Map(rows.map((row) => [row.file_id!, toDocument(row)]));
  }

  /** Moves a document on (never back from `done` or `failed`). */
  async setStatus(id: string, status: DocumentStatus, fields: { chunksTotal?: number } = {}): Promise<void> {
    await this.pool.query(
      `update rag_documents set status = $2, chunks_total = coalesce($3, chunks_total), updated_at = now()
       where id = $1 and status not in ('done', 'failed')`,
      [id, status, fields.chunksTotal ?? null],
    );
  }

  /** Writes chunks (those already written, by an earlier try, stay as they are). */
  async writeChunks(document: RagDocument, chunks: NewChunk[]): Promise<void> {
    if (chunks.length === 0) return;
    await this.pool.query(
      `insert into rag_chunks (document_id, seq, user_id, file_id, model, text, location)
       select $1, c.seq, $2, $3, $4, c.text, c.location
       from unnest($5::int[], $6::text[], $7::jsonb[]) as c(seq, text, location)
       on conflict (document_id, seq) do nothing`,
      [
        document.id,
        document.userId,
        document.fileId,
        document.model,
        chunks.map((chunk) => chunk.seq),
        chunks.map((chunk) => chunk.text),
        chunks.map((chunk) => JSON.stringify(chunk.location)),
      ],
    );
  }

  /** How many chunks the document has. */
  async chunkCount(id: string): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>(
      'select count(*) from rag_chunks where document_id = $1',
      [id],
    );
    return Number(rows[0]!.count);
  }

  /** Chunks still without a vector, in order. */
  async unembedded(id: string, limit: number): Promise<Array<{ seq: number; text: string }>> {
    const { rows } = await this.pool.query<{ seq: number; text: string }>(
      `select seq, text from rag_chunks where document_id = $1 and embedding is null order by seq limit $2`,
      [id, limit],
    );
    return rows;
  }

  /** Stores vectors (a chunk that has one keeps it) and counts the document's embedded chunks. */
  async storeEmbeddings(id: string, embedded: Array<{ seq: number; vector: Float32Array }>): Promise<number> {
    const { rows } = await this.pool.query<{ done: number }>(
      `with stored as (
         update rag_chunks c set embedding = e.embedding::vector
         from unnest($2::int[], $3::text[]) as e(seq, embedding)
         where c.document_id = $1 and c.seq = e.seq and c.embedding is null
         returning 1
       )
       update rag_documents set chunks_done = chunks_done + (select count(*) from stored), updated_at = now()
       where id = $1 returning chunks_done as done`,
      [id, embedded.map((entry) => entry.seq), embedded.map((entry) => vectorLiteral(entry.vector))],
    );
    return rows[0]?.done ?? 0;
  }

  /**
   * Makes the document searchable and deletes the documents of the same file it replaces, in one transaction.
   * False when the document is gone (its file was deleted meanwhile).
   */
  async finish(id: string): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<DocumentRow>(
        `update rag_documents set status = 'done', finished_at = now(), updated_at = now(),
           chunks_done = (select count(*) from rag_chunks where document_id = $1 and embedding is not null)
         where id = $1 and status <> 'failed' returning *`,
        [id],
      );
      const document = rows[0];
      if (document?.file_id) {
        await client.query(
          `delete from rag_documents where file_id = $1 and user_id = $2 and id <> $3 and created_at <= $4`,
          [document.file_id, document.user_id, id, document.created_at],
        );
      }
      await client.query('commit');
      return document !== undefined;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async fail(id: string, error: string): Promise<void> {
    await this.pool.query(
      `update rag_documents set status = 'failed', error = $2, finished_at = now(), updated_at = now()
       where id = $1 and status <> 'done'`,
      [id, error.slice(0, 2_000)],
    );
  }

  /**
   * The user's chunks nearest to `vector` (cosine), from finished documents indexed with `model`; `fileId` narrows to
   * one file. An empty index answers an empty list.
   */
  async search(
    userId: string,
    vector: Float32Array,
    options: { model: string; k: number; fileId?: string },
  ): Promise<SearchHit[]> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      for (const setting of searchSettings) await client.query(setting);
      const { rows } = await client.query<{
        text: string;
        location: ChunkLocation;
        document_id: string;
        file_id: string | null;
        title: string;
        distance: number;
      }>(searchStatement, [vectorLiteral(vector), userId, options.model, options.fileId ?? null, options.k]);
      await client.query('commit');
      return rows
        .map((row) => ({
          text: row.text,
          score: Math.round((1 - Number(row.distance)) * 10_000) / 10_000,
          documentId: row.document_id,
          fileId: row.file_id,
          title: row.title,
          location: row.location,
        }))
        .sort((a, b) => b.score - a.score);
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The text of a file's newest finished document in order, `limit` chunks from `after` (for the read_upload tool). */
  async fileText(
    userId: string,
    fileId: string,
    options: { after: number; limit: number },
  ): Promise<Array<{ seq: number; text: string; location: ChunkLocation }>> {
    const { rows } = await this.pool.query<{ seq: number; text: string; location: ChunkLocation }>(
      `select c.seq, c.text, c.location from rag_chunks c
       where c.document_id = (select id from rag_documents where user_id = $1 and file_id = $2 and status = 'done'
                              order by created_at desc limit 1)
         and c.seq > $3
       order by c.seq limit $4`,
      [userId, fileId, options.after, options.limit],
    );
    return rows;
  }
}

/**
 * The search's settings, for its transaction alone. The HNSW scan keeps reading the graph until `k` rows pass the
 * filters (pgvector 0.8's iterative scans): a user's chunks are a small part of everyone's, and a plain scan would
 * stop at ef_search candidates, most of them other users'. relaxed_order may return rows slightly out of order: the
 * search sorts them again. (Exported with the statement for `npm run bench:rag`, which EXPLAINs them and measures
 * their recall against an exact scan.)
 */
export const searchSettings = ['set local hnsw.iterative_scan = relaxed_order', 'set local hnsw.ef_search = 100'];

/** The search: $1 the query's vector, $2 the user, $3 the model, $4 a file id or null, $5 k. */
export const searchStatement = `
  select c.text, c.location, c.document_id, c.file_id, d.title, c.embedding <=> $1::vector as distance
  from rag_chunks c join rag_documents d on d.id = c.document_id
  where c.user_id = $2 and c.model = $3 and d.status = 'done' and c.embedding is not null
    and ($4::text is null or c.file_id = $4)
  order by c.embedding <=> $1::vector
  limit $5`;

/** pgvector's text form of a vector: `[0.1,0.2,…]`. */
export function vectorLiteral(vector: Float32Array | number[]): string {
  return `[${Array.from(vector, (value) => (Number.isFinite(value) ? value : 0)).join(',')}]`;
}

function toDocument(row: DocumentRow): RagDocument {
  return {
    id: row.id,
    userId: row.user_id,
    fileId: row.file_id,
    title: row.title,
    source: row.source,
    status: row.status,
    model: row.model,
    chunksTotal: row.chunks_total,
    chunksDone: row.chunks_done,
    error: row.error,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    finishedAt: row.finished_at ? new Date(row.finished_at) : null,
  };
}
