/**
 * Media result files: bytes stored under `MEDIA_DIR` with unguessable names (`<32 random bytes, base64url>.<ext>`),
 * served by the gateway at `GET /api/v1/media/files/{name}` without authentication. The name is the capability:
 * whoever holds the URL can fetch the file (as with a hosted provider's output URL), and 256 random bits cannot be
 * guessed. Files are written once (to a temporary name, then renamed) and never changed; the content type is the
 * extension's. `MEDIA_FILE_TTL_DAYS` states how long a file is promised to stay; no sweep deletes older files yet.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
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

/** A stored file's name: 43 base64url characters, a dot, a known extension. */
const namePattern = /^[A-Za-z0-9_-]{43}\.([a-z0-9]{2,4})$/;

export class MediaFiles {
  readonly directory: string;

  constructor(directory: string) {
    this.directory = directory;
  }

  /** Stores `bytes` under a new name and returns it. */
  async save(bytes: Uint8Array, contentType: string): Promise<string> {
    const extension = extensions[contentType.split(';')[0]!.trim().toLowerCase()];
    if (!extension) throw new Error(`media files of type ${contentType} are not stored`);
    const name = `${randomBytes(32).toString('base64url')}.${extension}`;
    await mkdir(this.directory, { recursive: true });
    const temporary = join(this.directory, `.${name}.partial`);
    await writeFile(temporary, bytes);
    await rename(temporary, join(this.directory, name));
    return name;
  }

  /** The file of that name, or null when the name is malformed or nothing is stored under it. */
  async open(name: string): Promise<{ stream: Readable; size: number; contentType: string } | null> {
    const match = namePattern.exec(name);
    const contentType = match && contentTypes[match[1]!];
    if (!contentType) return null;
    const path = join(this.directory, name);
    try {
      const stats = await stat(path);
      if (!stats.isFile()) return null;
      return { stream: createReadStream(path), size: stats.size, contentType };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
}

/** The public path of a stored file. */
export const mediaFilePath = (name: string) => `/api/v1/media/files/${name}`;
