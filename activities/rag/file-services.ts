/**
 * What the agents' file tools (`rag_search`, `read_upload`: activities/tools/) use to reach a user's files: the
 * search the `GET /rag/search` route runs (the same embedding model and index), and a file's text read straight from
 * the file (a PDF's pages, a table's rows), so an agent can read a file whether or not it was indexed.
 */
import type { EmbeddingService } from '../embeddings/embedding-service.ts';
import { tableRows } from '../uploads/table-rows.ts';
import type { UploadStore } from '../uploads/upload-store.ts';
import { pdfPageText } from './extract.ts';
import type { RagModel } from './rag-model.ts';
import type { RagStore, SearchHit } from './rag-store.ts';

export interface FileServices {
  list(userId: string): Promise<Array<{ id: string; file_name: string; kind: string; bytes: number; indexed: string }>>;
  search(userId: string, query: string, options: { k: number; fileId?: string }): Promise<SearchHit[]>;
  /** Text of the file from `from` (a PDF page, a table row), up to about `maxChars`; `next` continues. */
  read(
    userId: string,
    fileId: string,
    options: { from: number; maxChars: number },
  ): Promise<{ file_name: string; kind: string; text: string; from: number; to: number; next: number | null } | null>;
}

export function createFileServices(dependencies: {
  uploads: UploadStore;
  rag: RagStore;
  embeddings: EmbeddingService;
  ragModel: RagModel;
}): FileServices {
  const { uploads, rag, embeddings, ragModel } = dependencies;
  return {
    async list(userId) {
      const files = await uploads.list(userId);
      const indexes = await rag.latestForFiles(
        userId,
        files.map((file) => file.id),
      );
      return files.map((file) => ({
        id: file.id,
        file_name: file.fileName,
        kind: file.kind,
        bytes: file.bytes,
        indexed: indexes.get(file.id)?.status ?? 'not indexed',
      }));
    },

    async search(userId, query, options) {
      const { vectors } = await embeddings.embedQuery({
        userId,
        model: ragModel.id,
        texts: [query],
        ...ragModel.request,
      });
      return rag.search(userId, vectors[0]!, { model: ragModel.id, ...options });
    },

    async read(userId, fileId, options) {
      const upload = await uploads.open(userId, fileId);
      if (!upload) return null;
      const base = { file_name: upload.fileName, kind: upload.kind };
      if (upload.kind === 'pdf') {
        const { pages, texts } = await pdfPageText(upload, options.from, options.maxChars);
        const last = texts.at(-1)?.page ?? options.from;
        return {
          ...base,
          text: texts.map((page) => `[page ${page.page}]\n${page.text}`).join('\n\n'),
          from: options.from,
          to: last,
          next: last < pages ? last + 1 : null,
        };
      }
      if (upload.kind === 'csv' || upload.kind === 'xlsx') {
        const lines: string[] = [];
        let header: string | null = null;
        let length = 0;
        let to = options.from;
        let next: number | null = null;
        for await (const row of tableRows(upload)) {
          if ('error' in row) continue;
          const line = `${row.sheet ? `${row.sheet} ` : ''}row ${row.line}: ${row.values.join(' | ')}`;
          if (header === null) {
            header = line;
            continue;
          }
          if (row.line < options.from) continue;
          if (length + line.length > options.maxChars && lines.length > 0) {
            next = row.line;
            break;
          }
          lines.push(line);
          length += line.length + 1;
          to = row.line;
        }
        return { ...base, text: [header ?? '', ...lines].join('\n'), from: options.from, to, next };
      }
      return {
        ...base,
        text: 'This is an image: its text can be searched once it is indexed (rag_search); to look at it, the user attaches it to a message.',
        from: 0,
        to: 0,
        next: null,
      };
    },
  };
}
