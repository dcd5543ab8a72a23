/**
 * The gateway's Files API (`/v1/files`, OpenAI's): files of requests a client hands over for a batch. A file is taken
 * from a temporary file on disk (never whole in memory) and checked line by line as OpenAI's Batch API defines its
 * input (docs/client-apis.md, "Files"): every line a JSON object `{custom_id, method: "POST", url, body}` with a
 * `custom_id` unique in the file, a `url` among the endpoints a batch serves and an object `body`; blank lines are not
 * allowed. The first line at fault is named in the refusal (`FileRefused`), and nothing is kept. Limits: at most
 * `maxBytes` and `maxLines` (FILES_MAX_BYTES, FILES_MAX_LINES).
 *
 * The bytes go to the platform's one byte store (the media store: local disk or S3, activities/media/files.ts) under
 * `files/<user id>/<file id>`, the row to `api_files`. Every read names the owner: another user's file is answered as
 * one that does not exist.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Pool } from '../../db/pool.ts';
import type { MediaStore } from '../media/files.ts';

/** The endpoints a batch line may name (`url`), as OpenAI's Batch API lists those this platform serves. */
export const batchEndpoints = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/messages'] as const;

/** What a client may upload a file for; the platform's own files are `batch_output` (a batch's output and errors). */
export const filePurposes = ['batch'] as const;

export interface ApiFileRecord {
  id: string;
  userId: string;
  purpose: string;
  filename: string;
  bytes: number;
  lineCount: number;
  storageKey: string;
  createdAt: Date;
}

export class FileRefused extends Error {
  readonly param: string;
  constructor(message: string, param = 'file') {
    super(message);
    this.param = param;
  }
}

interface Row {
  id: string;
  user_id: string;
  purpose: string;
  filename: string;
  bytes: string | number;
  line_count: number;
  storage_key: string;
  created_at: Date;
}

const toRecord = (row: Row): ApiFileRecord => ({
  id: row.id,
  userId: row.user_id,
  purpose: row.purpose,
  filename: row.filename,
  bytes: Number(row.bytes),
  lineCount: row.line_count,
  storageKey: row.storage_key,
  createdAt: row.created_at,
});

export interface ApiFileStoreOptions {
  pool: Pool;
  store: MediaStore;
  maxBytes: number;
  maxLines: number;
}

export class ApiFileStore {
  private readonly options: ApiFileStoreOptions;

  constructor(options: ApiFileStoreOptions) {
    this.options = options;
  }

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  /**
   * Takes the file at `path` (`bytes` long, already within `maxBytes`) for `purpose`: checks its lines, stores it and
   * records it. Throws `FileRefused` naming the first line at fault; nothing is kept then.
   */
  async save(userId: string, file: { path: string; bytes: number; filename: string; purpose: string }) {
    const lineCount = await this.check(file.path);
    const id = `file-${randomBytes(18).toString('base64url')}`;
    return this.keep(userId, { ...file, id, lineCount });
  }

  /**
   * Keeps a file the platform wrote (a batch's output or error file, `purpose: batch_output`) under the id given:
   * keeping it again under the same id replaces it, so a step that writes it may be retried.
   */
  async keep(
    userId: string,
    file: { id: string; path: string; bytes: number; filename: string; purpose: string; lineCount: number },
  ): Promise<ApiFileRecord> {
    const { pool, store } = this.options;
    const storageKey = `files/${userId}/${file.id}`;
    await store.putFile(storageKey, file.path, 'application/jsonl');
    try {
      const { rows } = await pool.query<Row>(
        `insert into api_files (id, user_id, purpose, filename, bytes, line_count, storage_key, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, now())
         on conflict (id) do update set bytes = excluded.bytes, line_count = excluded.line_count
         returning *`,
        [file.id, userId, file.purpose, file.filename, file.bytes, file.lineCount, storageKey],
      );
      return toRecord(rows[0]!);
    } catch (error) {
      await store.delete(storageKey).catch(() => undefined);
      throw error;
    }
  }

  /** Reads the file line by line: each a batch request line; returns how many there are. */
  private async check(path: string): Promise<number> {
    const ids = new Set<string>();
    let line = 0;
    const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
    for await (const text of lines) {
      line += 1;
      if (line > this.options.maxLines) {
        throw new FileRefused(`The file has more than ${this.options.maxLines} lines`);
      }
      const refuse = (why: string) => new FileRefused(`Line ${line}: ${why}`);
      if (text.trim() === '') throw refuse('is empty (every line is one request)');
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw refuse('is not JSON');
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refuse('is not a JSON object');
      const request = value as { custom_id?: unknown; method?: unknown; url?: unknown; body?: unknown };
      if (typeof request.custom_id !== 'string' || request.custom_id === '' || request.custom_id.length > 512) {
        throw refuse('custom_id must be a string of 1 to 512 characters');
      }
      if (ids.has(request.custom_id)) throw refuse(`custom_id ${request.custom_id} is used on an earlier line`);
      ids.add(request.custom_id);
      if (request.method !== 'POST') throw refuse('method must be POST');
      if (typeof request.url !== 'string' || !(batchEndpoints as readonly string[]).includes(request.url)) {
        throw refuse(`url must be one of ${batchEndpoints.join(', ')}`);
      }
      if (request.body === null || typeof request.body !== 'object' || Array.isArray(request.body)) {
        throw refuse('body must be a JSON object');
      }
    }
    if (line === 0) throw new FileRefused('The file is empty');
    return line;
  }

  /** The caller's files, newest first (or oldest with `order: asc`), after the file `after`, at most `limit`. */
  async list(
    userId: string,
    query: { purpose?: string; after?: string; limit: number; order: 'asc' | 'desc' },
  ): Promise<{ files: ApiFileRecord[]; hasMore: boolean }> {
    const direction = query.order === 'asc' ? 'asc' : 'desc';
    const comparison = query.order === 'asc' ? '>' : '<';
    const { rows } = await this.options.pool.query<Row>(
      `select * from api_files
       where user_id = $1 and ($2::text is null or purpose = $2)
         and ($3::text is null or (created_at, id) ${comparison}
              (select created_at, id from api_files where id = $3 and user_id = $1))
       order by created_at ${direction}, id ${direction}
       limit $4`,
      [userId, query.purpose ?? null, query.after ?? null, query.limit + 1],
    );
    return { files: rows.slice(0, query.limit).map(toRecord), hasMore: rows.length > query.limit };
  }

  async get(userId: string, id: string): Promise<ApiFileRecord | null> {
    const { rows } = await this.options.pool.query<Row>('select * from api_files where id = $1 and user_id = $2', [
      id,
      userId,
    ]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** The file's bytes, streamed from the store; null when the file is not the caller's (or its bytes are gone). */
  async open(userId: string, id: string) {
    const file = await this.get(userId, id);
    if (!file) return null;
    const object = await this.options.store.get(file.storageKey);
    return object ? { file, stream: object.stream } : null;
  }

  /** Deletes the caller's file and its bytes; false when there was none. */
  async delete(userId: string, id: string): Promise<boolean> {
    const { rows } = await this.options.pool.query<{ storage_key: string }>(
      'delete from api_files where id = $1 and user_id = $2 returning storage_key',
      [id, userId],
    );
    if (!rows[0]) return false;
    await this.options.store.delete(rows[0].storage_key);
    return true;
  }
}
