/**
 * Media files: results that jobs produce (speech, videos, music, …) and inputs that jobs read (uploaded images or
 * audio), served by the gateway at `GET /api/v1/media/files/{name}` without authentication. The name is the
 * capability: whoever holds the URL can fetch the file (as with a hosted provider's output URL), and 256 random bits
 * cannot be guessed. A result is named `<32 random bytes, base64url>.<ext>`, an input `input-<same>.<ext>`; the
 * content type is the extension's.
 *
 * `MediaFiles` holds the rules (names, content types, expiry) over a `MediaStore` that only moves bytes: the local
 * disk under `MEDIA_DIR` (`LocalMediaStore`, below) or an S3-compatible bucket (`S3MediaStore`, s3-store.ts). Results
 * are kept under `results/`, inputs under `inputs/`, so each store can be looked at, or cleaned, one kind at a time.
 *
 * Every file expires `MEDIA_FILE_TTL_DAYS` after it was stored (the store's own time: a file's mtime, an object's
 * LastModified). Past that it is answered as absent (the URL says 404, as for a name never issued) even before the
 * sweep (`sweep`, run by the `mediaFilesSweep` schedule: activities/media/sweep.ts) has deleted it, so a file's life
 * does not depend on when the sweep last ran.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

const extensions: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/wav': 'wav',
  'audio/mp4': 'm4a',
  'video/mp4': 'mp4',
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};
const contentTypes = Object.fromEntries(Object.entries(extensions).map(([type, extension]) => [extension, type]));

/** What a stored file is for: a job's `result` (the default) or an `input` a job reads. */
export type MediaFileKind = 'result' | 'input';

/** The store's folder of each kind. */
const folders: Record<MediaFileKind, string> = { result: 'results', input: 'inputs' };

/** A stored file's name: an optional `input-`, 43 base64url characters, a dot, a known extension. */
const namePattern = /^(input-)?[A-Za-z0-9_-]{43}\.([a-z0-9]{2,4})$/;

/** An object as a store answers it. */
export interface StoredObject {
  stream: Readable;
  size: number;
  /** When it was written (mtime, LastModified): its age decides its expiry. */
  storedAt: Date;
}

/** Where the bytes live. Keys are `<folder>/<name>`; every object is written once and never changed. */
export interface MediaStore {
  /** For logs and errors: `local directory /x`, `S3 bucket b at http://…`. */
  readonly description: string;
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Stores the file at `path` (streamed: an upload may be larger than is wise to hold in memory). */
  putFile(key: string, path: string, contentType: string): Promise<void>;
  /** The object, or null when nothing is stored under the key. */
  get(key: string): Promise<StoredObject | null>;
  /** Deletes the object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Every object under `<folder>/` with its time (for the sweep); the order is the store's. */
  list(folder: string): AsyncIterable<{ key: string; storedAt: Date }>;
}

/** How a bucket names itself in logs and errors (the S3 store's `description`, before and after its SDK is loaded). */
export function bucketDescription(options: { bucket: string; endpoint?: string }): string {
  return `S3 bucket ${options.bucket}${options.endpoint ? ` at ${options.endpoint}` : ''}`;
}

/** A file opened for serving. */
export interface MediaFile {
  stream: Readable;
  size: number;
  contentType: string;
  /** When the file stops being served (and the sweep may delete it). */
  expiresAt: Date;
}

export interface MediaFilesOptions {
  /** How long a file is kept (MEDIA_FILE_TTL_DAYS); default 7 days. */
  ttlMs?: number;
  /** The clock expiry is judged by (tests set it). */
  now?: () => Date;
}

export const dayMs = 86_400_000;

export class MediaFiles {
  readonly store: MediaStore;
  readonly ttlMs: number;
  private readonly now: () => Date;

  /** Files in `store`, or on the local disk under a directory (`MEDIA_DIR`) when given a path. */
  constructor(store: MediaStore | string, options: MediaFilesOptions = {}) {
    this.store = typeof store === 'string' ? new LocalMediaStore(store) : store;
    this.ttlMs = options.ttlMs ?? 7 * dayMs;
    this.now = options.now ?? (() => new Date());
  }

  /** Stores `bytes` under a new name and returns it; `kind: 'input'` stores a job's input apart from results. */
  async save(bytes: Uint8Array, contentType: string, options: { kind?: MediaFileKind } = {}): Promise<string> {
    const extension = extensions[contentType.split(';')[0]!.trim().toLowerCase()];
    if (!extension) throw new Error(`media files of type ${contentType} are not stored`);
    const kind = options.kind ?? 'result';
    const name = `${kind === 'input' ? 'input-' : ''}${randomBytes(32).toString('base64url')}.${extension}`;
    await this.store.put(`${folders[kind]}/${name}`, bytes, contentTypes[extension]!);
    return name;
  }

  /** The file of that name, or null when the name is malformed, nothing is stored under it, or it expired. */
  async open(name: string): Promise<MediaFile | null> {
    const parsed = parseName(name);
    if (!parsed) return null;
    const object = await this.store.get(parsed.key);
    if (!object) return null;
    if (this.hasExpired(object.storedAt)) {
      object.stream.destroy();
      return null;
    }
    return {
      stream: object.stream,
      size: object.size,
      contentType: parsed.contentType,
      expiresAt: this.expiresAt(object.storedAt),
    };
  }

  /** The whole file (for engines that take an input file), or null as for `open`. */
  async read(name: string): Promise<Uint8Array | null> {
    const file = await this.open(name);
    if (!file) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of file.stream) chunks.push(chunk as Buffer);
    return new Uint8Array(Buffer.concat(chunks));
  }

  /** Deletes the file of that name (a malformed or missing name is a no-op). */
  async delete(name: string): Promise<void> {
    const parsed = parseName(name);
    if (parsed) await this.store.delete(parsed.key);
  }

  /** When a file stored at `storedAt` expires. */
  expiresAt(storedAt: Date): Date {
    return new Date(storedAt.getTime() + this.ttlMs);
  }

  /** Whether a file stored at `storedAt` has expired by now. */
  hasExpired(storedAt: Date): boolean {
    return storedAt.getTime() <= this.storedBefore().getTime();
  }

  /** The time before which (inclusive) stored files have expired by now. */
  storedBefore(): Date {
    return new Date(this.now().getTime() - this.ttlMs);
  }

  /**
   * Deletes every object in the store's folders that has expired (anything there, leftovers of interrupted writes
   * too), in batches of `concurrency` deletes; `onProgress` is called after each batch (the activity heartbeats).
   * Answers the names of the files deleted.
   */
  async sweep(options: { concurrency?: number; onProgress?: (deleted: number) => void } = {}): Promise<string[]> {
    const concurrency = options.concurrency ?? 16;
    const deleted: string[] = [];
    for (const folder of Object.values(folders)) {
      let batch: string[] = [];
      const flush = async () => {
        await Promise.all(batch.map((key) => this.store.delete(key)));
        deleted.push(...batch.map((key) => key.slice(folder.length + 1)));
        batch = [];
        options.onProgress?.(deleted.length);
      };
      for await (const { key, storedAt } of this.store.list(folder)) {
        if (!this.hasExpired(storedAt)) continue;
        batch.push(key);
        if (batch.length >= concurrency) await flush();
      }
      if (batch.length > 0) await flush();
    }
    return deleted;
  }
}

/** The content type a stored file's name gives it (its extension's), or null for a name never issued. */
export function mediaContentType(name: string): string | null {
  return parseName(name)?.contentType ?? null;
}

function parseName(name: string): { key: string; contentType: string } | null {
  const match = namePattern.exec(name);
  const contentType = match && contentTypes[match[2]!];
  if (!contentType) return null;
  return { key: `${folders[match[1] ? 'input' : 'result']}/${name}`, contentType };
}

/**
 * Files on the local disk under one directory. A file is written to a temporary name, then renamed, so a reader
 * never sees half of one. The API and the worker must share the directory (both store and serve files).
 */
export class LocalMediaStore implements MediaStore {
  readonly directory: string;

  constructor(directory: string) {
    this.directory = directory;
  }

  get description(): string {
    return `local directory ${this.directory}`;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const path = join(this.directory, key);
    const folder = join(path, '..');
    await mkdir(folder, { recursive: true });
    // A dot name: listed by the sweep (an interrupted write is deleted once old), never a valid file name.
    const temporary = join(folder, `.${key.slice(key.lastIndexOf('/') + 1)}.partial`);
    await writeFile(temporary, bytes);
    await rename(temporary, path);
  }

  async putFile(key: string, source: string): Promise<void> {
    const path = join(this.directory, key);
    const folder = join(path, '..');
    await mkdir(folder, { recursive: true });
    const temporary = join(folder, `.${key.slice(key.lastIndexOf('/') + 1)}.partial`);
    await copyFile(source, temporary);
    await rename(temporary, path);
  }

  async get(key: string): Promise<StoredObject | null> {
    const path = join(this.directory, key);
    try {
      const stats = await stat(path);
      if (!stats.isFile()) return null;
      return { stream: createReadStream(path), size: stats.size, storedAt: stats.mtime };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(join(this.directory, key), { force: true });
  }

  async *list(folder: string): AsyncIterable<{ key: string; storedAt: Date }> {
    let entries;
    try {
      entries = await readdir(join(this.directory, folder), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const key = `${folder}/${entry.name}`;
      try {
        yield { key, storedAt: (await stat(join(this.directory, key))).mtime };
      } catch (error) {
        // Deleted meanwhile (a concurrent sweep): nothing to do.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}

/** The public path of a stored file. */
export const mediaFilePath = (name: string) => `/api/v1/media/files/${name}`;
