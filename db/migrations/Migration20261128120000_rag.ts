import { Migration } from '@mikro-orm/migrations';

/**
 * The RAG index (docs/files-and-rag.md; activities/rag/rag-store.ts). Written by hand, not generated from
 * entities: the `vector` type and its HNSW index are pgvector's, which MikroORM's schema tools do not know, so both
 * tables are left out of the schema comparison (db/orm.ts, `skipTables`).
 *
 * - `rag_documents`: one indexing of a file (or of text): its status, progress and the embedding model. Deleting the
 *   file deletes its documents (foreign key), and a document's chunks go with it.
 * - `rag_chunks`: the document's chunks, keyed by their position (`seq`), so a retried or resumed step writes each
 *   once. `embedding` is 512 floats (the platform's one RAG size: the local engine's, and the size OpenAI's and
 *   Gemini's embedding models shorten to natively), null until embedded. The HNSW index (cosine distance) serves
 *   search; `user_id` is filtered in the same query (pgvector's iterative index scans keep a selective filter from
 *   starving the result).
 */
export class Migration20261128120000_rag extends Migration {
  override name = 'Migration20261128120000_rag';

  override up(): void {
    this.addSql(`create table "rag_documents" (
      "id" text primary key,
      "user_id" text not null,
      "file_id" text null references "uploads" ("id") on delete cascade,
      "title" text not null,
      "source" text not null,
      "status" text not null,
      "model" text not null,
      "chunks_total" int null,
      "chunks_done" int not null default 0,
      "error" text null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      "finished_at" timestamptz null
    );`);
    this.addSql(`create index "rag_documents_user_id_created_at_index" on "rag_documents" ("user_id", "created_at");`);
    this.addSql(`create index "rag_documents_file_id_index" on "rag_documents" ("file_id");`);
    this.addSql(`create table "rag_chunks" (
      "document_id" text not null references "rag_documents" ("id") on delete cascade,
      "seq" int not null,
      "user_id" text not null,
      "file_id" text null,
      "model" text not null,
      "text" text not null,
      "location" jsonb not null,
      "embedding" vector(512) null,
      primary key ("document_id", "seq")
    );`);
    this.addSql(`create index "rag_chunks_user_id_index" on "rag_chunks" ("user_id");`);
    this.addSql(
      `create index "rag_chunks_embedding_index" on "rag_chunks" using hnsw ("embedding" vector_cosine_ops);`,
    );
  }

  override down(): void {
    this.addSql(`drop table if exists "rag_chunks";`);
    this.addSql(`drop table if exists "rag_documents";`);
  }
}
