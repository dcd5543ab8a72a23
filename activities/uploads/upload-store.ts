/**
 * Uploaded files (agent service spec §2 File, §4.9; docs/files-and-rag.md): PDFs, Excel workbooks, CSV files and images
 * that a user gives the platform to index, search and query. One store, used by the HTTP routes
 * (api/services/uploads/), the RAG indexer and the table import (activities), and the agents' tools.
 *
 * - **The type comes from the bytes**, never from the name or the declared type: `file-type` reads the magic numbers
 *   (a PDF's `%PDF-`, a PNG's signature, an xlsx's zip entries), and a text file is a CSV when its start is UTF-8
 *   that `csv-parse` reads as rows of at least two columns, most (80 %) of the header's width (the delimiter is the
 *   one the header line uses most, as the table readers decide it). Anything else is refused naming what was found
 *   (`UploadRefused`, kind `unsupported_type`: the API's 415).
 * - **Size and quota**: a file over `maxFileBytes` is refused as it streams in (nothing is kept), and the account's
 *   files together may not pass `quotaBytes`: checked in the statement that records the file, under a lock of the
 *   account's row, so two uploads at once cannot both slip under it.
 * - **Streaming**: the bytes go to a temporary file while they are counted, hashed and sniffed, then to the media
 *   store (local disk or S3: activities/media/files.ts) under `uploads/<user id>/<file id>`; nothing holds a whole
 *   file in memory. Uploads never expire: they are the user's until deleted.
 * - **Ownership**: every read names the owner; another user's file is answered as one that does not exist.
 * - **Deleting** a file removes its row and its bytes, then tells each `onDelete` listener (the RAG index drops the
 *   file's chunks), so nothing indexed from it outlives it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import { fileTypeFromFile } from 'file-type';
import type { Pool } from '../../db/pool.ts';
import type { MediaStore } from '../media/files.ts';

export const uploadKinds = ['pdf', 'xlsx', 'csv', 'png', 'jpeg', 'webp', 'gif'] as const;
export type UploadKind = (typeof uploadKinds)[number];

/** The content type each kind is stored and served with. */
export const uploadContentTypes: Record<UploadKind, string> = {
  pdf: 'application/pdf',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv',
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

/** `file-type`'s answer for each kind it recognises. */
const sniffedKinds: Record<string, UploadKind> = {
  pdf: 'pdf',
  xlsx: 'xlsx',
  png: 'png',
  jpg: 'jpeg',
  webp: 'webp',
  gif: 'gif',
};

export interface UploadRecord {
  id: string;
  userId: string;
  fileName: string;
  kind: UploadKind;
  contentType: string;
  bytes: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  createdAt: Date;
}

export interface OpenedUpload extends UploadRecord {
  /** The bytes, streamed from the store. */
  stream(): Promise<Readable>;
}

/** Why a file was not taken: too large, over the account's quota, or not a type the platform reads. */
export class UploadRefused extends Error {
  readonly reason: 'too_large' | 'quota' | 'unsupported_type';

  constructor(reason: UploadRefused['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface UploadStoreOptions {
  pool: Pool;
  store: MediaStore;
  /** The largest file taken (UPLOAD_MAX_BYTES). */
  maxFileBytes: number;
  /** What one account's files may take together (UPLOAD_QUOTA_BYTES). */
  quotaBytes: number;
}

/** Bytes of a file's start read to tell a CSV from other text. */
const sniffBytes = 64 * 1024;
/** Rows of that start read to judge a CSV, and the share of them that must have the header's width. */
const csvSampleRows = 20;
const csvMatchingShare = 0.8;

interface UploadRow {
  id: string;
  user_id: string;
  file_name: string;
  kind: UploadKind;
  content_type: string;
  bytes: string | number;
  sha256: string;
  storage_key: string;
  created_at: Date;
}

export class UploadStore {
  private readonly options: UploadStoreOptions;
  private readonly deleteListeners: Array<(userId: string, fileId: string) => Promise<void>> = [];

  constructor(options: UploadStoreOptions) {
    this.options = options;
  }

  get maxFileBytes(): number {
    return this.options.maxFileBytes;
  }

  get quotaBytes(): number {
    return this.options.quotaBytes;
  }

  /** Runs `listener` after a file is deleted (what was derived from it goes too). */
  onDelete(listener: (userId: string, fileId: string) => Promise<void>): void {
    this.deleteListeners.push(listener);
  }

  /**
   * Takes a file: streams it to a temporary file (refused past `maxFileBytes`), decides its kind from its bytes,
   * stores it and records it within the account's quota. Throws `UploadRefused`; nothing is kept when it does.
   */
  async save(userId: string, fileName: string, source: Readable | Uint8Array): Promise<UploadRecord> {
    const { store, maxFileBytes, quotaBytes } = this.options;
    const folder = await mkdtemp(join(tmpdir(), 'tessera-upload-'));
    try {
      const path = join(folder, 'file');
      const hash = createHash('sha256');
      let bytes = 0;
      const head: Buffer[] = [];
      let headBytes = 0;
      const measure = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          if (bytes > maxFileBytes) {
            done(new UploadRefused('too_large', `The file is larger than the limit of ${describeBytes(maxFileBytes)}`));
            return;
          }
          hash.update(chunk);
          if (headBytes < sniffBytes) {
            head.push(chunk.subarray(0, sniffBytes - headBytes));
            headBytes += Math.min(chunk.length, sniffBytes - headBytes);
          }
          done(null, chunk);
        },
      });
      const input = source instanceof Readable ? source : Readable.from([Buffer.from(source)]);
      await pipeline(input, measure, createWriteStream(path));
      if (bytes === 0) throw new UploadRefused('unsupported_type', 'The file is empty');
      const kind = await kindOf(path, Buffer.concat(head));
      const id = `file_${randomToken()}`;
      const storageKey = `uploads/${userId}/${id}`;
      await store.putFile(storageKey, path, uploadContentTypes[kind]);
      const recorded = await this.record({
        id,
        userId,
        fileName,
        kind,
        bytes,
        sha256: hash.digest('hex'),
        storageKey,
        quotaBytes,
      }).catch(async (error: unknown) => {
        await store.delete(storageKey).catch(() => undefined);
        throw error;
      });
      if (!recorded) {
        await store.delete(storageKey);
        const used = await this.usedBytes(userId);
        throw new UploadRefused(
          'quota',
          `Your files would take more than your quota of ${describeBytes(quotaBytes)} ` +
            `(${describeBytes(used)} used, this file ${describeBytes(bytes)}): delete some first`,
        );
      }
      return recorded;
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }

  /** Records the file if the account's files stay within the quota: null when they would not. */
  private async record(file: {
    id: string;
    userId: string;
    fileName: string;
    kind: UploadKind;
    bytes: number;
    sha256: string;
    storageKey: string;
    quotaBytes: number;
  }): Promise<UploadRecord | null> {
    const client = await this.options.pool.connect();
    try {
      await client.query('begin');
      // The account's row is the lock: two uploads at once are checked one after the other.
      await client.query('select 1 from users where id = $1 for update', [file.userId]);
      const { rows } = await client.query<UploadRow>(
        `insert into uploads (id, user_id, file_name, kind, content_type, bytes, sha256, storage_key, created_at)
         select $1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint, $7::text, $8::text, now()
         where (select coalesce(sum(bytes), 0) from uploads where user_id = $2::text) + $6::bigint <= $9::bigint
         returning *`,
        [
          file.id,
          file.userId,
          file.fileName,
          file.kind,
          uploadContentTypes[file.kind],
          file.bytes,
          file.sha256,
          file.storageKey,
          file.quotaBytes,
        ],
      );
      await client.query('commit');
      return rows[0] ? toRecord(rows[0]) : null;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Bytes the account's files take. */
  async usedBytes(userId: string): Promise<number> {
    const { rows } = await this.options.pool.query<{ used: string }>(
      'select coalesce(sum(bytes), 0) as used from uploads where user_id = $1',
      [userId],
    );
    return Number(rows[0]!.used);
  }

  /** The account's files, newest first (the newest `limit`, when given). */
  async list(userId: string, limit?: number): Promise<UploadRecord[]> {
    const { rows } = await this.options.pool.query<UploadRow>(
      'select * from uploads where user_id = $1 order by created_at desc, id desc limit $2',
      [userId, limit ?? null],
    );
    return rows.map(toRecord);
  }

  /** The file, if it is the user's. */
  async get(userId: string, fileId: string): Promise<UploadRecord | null> {
    const row = await this.row(userId, fileId);
    return row ? toRecord(row) : null;
  }

  /** The file with a way to read its bytes, if it is the user's. */
  async open(userId: string, fileId: string): Promise<OpenedUpload | null> {
    const row = await this.row(userId, fileId);
    if (!row) return null;
    const { store } = this.options;
    return {
      ...toRecord(row),
      stream: async () => {
        const object = await store.get(row.storage_key);
        if (!object) throw new Error(`the bytes of ${row.id} are missing from ${store.description}`);
        return object.stream;
      },
    };
  }

  /** Deletes the user's file, its bytes and what was derived from it; false when there is no such file. */
  async delete(userId: string, fileId: string): Promise<boolean> {
    const { rows } = await this.options.pool.query<{ storage_key: string }>(
      'delete from uploads where id = $1 and user_id = $2 returning storage_key',
      [fileId, userId],
    );
    if (!rows[0]) return false;
    await this.options.store.delete(rows[0].storage_key);
    for (const listener of this.deleteListeners) await listener(userId, fileId);
    return true;
  }

  private async row(userId: string, fileId: string): Promise<UploadRow | null> {
    const { rows } = await this.options.pool.query<UploadRow>('select * from uploads where id = $1 and user_id = $2', [
      fileId,
      userId,
    ]);
    return rows[0] ?? null;
  }
}

/** The file's kind from its bytes, or `UploadRefused` naming what it is. */
async function kindOf(path: string, head: Buffer): Promise<UploadKind> {
  const sniffed = await fileTypeFromFile(path);
  if (sniffed) {
    const kind = sniffedKinds[sniffed.ext];
    if (kind) return kind;
    throw new UploadRefused(
      'unsupported_type',
      `The file is ${sniffed.mime} (.${sniffed.ext}); upload a PDF, an Excel workbook (xlsx), a CSV file or a PNG, JPEG, WebP or GIF image`,
    );
  }
  const text = csvProblem(head);
  if (text === null) return 'csv';
  throw new UploadRefused(
    'unsupported_type',
    `The file is ${text}; upload a PDF, an Excel workbook (xlsx), a CSV file or a PNG, JPEG, WebP or GIF image`,
  );
}

/** Null when the file's start reads as CSV; else what it is instead (for the refusal). */
function csvProblem(head: Buffer): string | null {
  let text: string;
  try {
    // `stream: true`: the sample may end inside a character, which is not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
  } catch {
    return 'binary data of an unknown type (neither a known format nor UTF-8 text)';
  }
  if (text.includes('\u0000')) return 'binary data of an unknown type';
  // Whole lines only: the sample may end in the middle of one.
  const complete = head.length >= sniffBytes ? text.slice(0, Math.max(text.lastIndexOf('\n'), 0)) : text;
  let rows: string[][];
  try {
    const body = complete.replace(/^\ufeff/, '');
    rows = parseCsv(body, {
      delimiter: headerDelimiter(body.split(/\r?\n/, 1)[0] ?? ''),
      to_line: csvSampleRows,
      skip_empty_lines: true,
      relax_quotes: false,
      relax_column_count: true,
    }) as string[][];
  } catch (error) {
    return `text that is not CSV (${(error as Error).message.split('\n')[0]})`;
  }
  if (rows.length === 0) return 'empty text';
  const width = rows[0]!.length;
  if (width < 2) return 'text with one column per line, not CSV (separate columns with commas, semicolons or tabs)';
  // Most lines must have the header's width: a table with a few bad rows is still a table (its import counts them),
  // prose with commas is not.
  const matching = rows.filter((row) => row.length === width).length;
  if (matching < Math.ceil(rows.length * csvMatchingShare)) {
    return 'text whose lines have different numbers of fields, not CSV';
  }
  return null;
}

/** The delimiter a header line uses most: comma, semicolon, tab or pipe (comma when it uses none). */
export function headerDelimiter(line: string): string {
  const counts = [',', ';', '\t', '|'].map((delimiter) => [delimiter, line.split(delimiter).length - 1] as const);
  const [best] = counts.sort((a, b) => b[1] - a[1]);
  return best && best[1] > 0 ? best[0] : ',';
}

function toRecord(row: UploadRow): UploadRecord {
  return {
    id: row.id,
    userId: row.user_id,
    fileName: row.file_name,
    kind: row.kind,
    contentType: row.content_type,
    bytes: Number(row.bytes),
    sha256: row.sha256,
    createdAt: new Date(row.created_at),
  };
}

/** 144 random bits, base64url: ids cannot be guessed (ownership is still checked on every read). */
function randomToken(): string {
  return randomBytes(18).toString('base64url');
}

/** `52.4 MB`, `800 KB`: for messages. */
export function describeBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`;
  return `${bytes} bytes`;
}

/** Reads a file made by `save` back for a caller that needs it whole (small files only: images for a model). */
export async function readWhole(upload: OpenedUpload): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await upload.stream()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
