/**
 * A multipart body with one file part, received to a temporary file (busboy): for a route that must read the whole file
 * before it decides (the Files API checks every line), whatever order the parts come in, without holding the file in
 * memory. A file past `maxBytes` is refused as it streams in (413), a body that is not multipart or has no part named
 * `file` is a 400, and the text fields go through the one text policy (api/text-policy.ts). `cleanup()` removes the
 * temporary file; the caller calls it once done.
 */
import type { IncomingMessage } from 'node:http';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { ApiError } from './errors.ts';
import { refuseUnacceptableText } from './text-policy.ts';

export interface ReceivedFile {
  path: string;
  bytes: number;
  /** The file name the client gave (its last path segment). */
  filename: string;
  fields: Record<string, string>;
  cleanup(): Promise<void>;
}

export async function receiveFile(request: IncomingMessage, options: { maxBytes: number }): Promise<ReceivedFile> {
  const folder = await mkdtemp(join(tmpdir(), 'tessera-file-'));
  const path = join(folder, 'file');
  const cleanup = () => rm(folder, { recursive: true, force: true });
  try {
    const received = await new Promise<Omit<ReceivedFile, 'path' | 'cleanup'>>((resolve, reject) => {
      let parser: busboy.Busboy;
      try {
        parser = busboy({
          headers: request.headers,
          limits: { files: 1, fileSize: options.maxBytes, fields: 10, fieldSize: 4096 },
        });
      } catch (error) {
        reject(new ApiError('invalid_request', `The multipart body cannot be read: ${(error as Error).message}`));
        return;
      }
      const fields: Record<string, string> = {};
      let writing: Promise<{ bytes: number; filename: string }> | undefined;
      let failure: unknown;
      parser.on('field', (name, value) => void (fields[name] = value));
      parser.on('file', (name, stream: Readable, info) => {
        if (name !== 'file' || writing) {
          failure ??= new ApiError('invalid_request', `Send one file, in the part named file (got ${name})`, {
            param: 'file',
          });
          stream.resume();
          return;
        }
        let bytes = 0;
        let truncated = false;
        stream.on('data', (chunk: Buffer) => void (bytes += chunk.length));
        stream.on('limit', () => void (truncated = true));
        writing = pipeline(stream, createWriteStream(path)).then(() => {
          if (truncated) {
            throw new ApiError('payload_too_large', `The file is larger than the limit of ${options.maxBytes} bytes`, {
              param: 'file',
            });
          }
          return { bytes, filename: (info.filename ?? 'file').split(/[\\/]/).pop() || 'file' };
        });
        writing.catch(() => undefined);
      });
      parser.on('error', (error: Error) =>
        reject(new ApiError('invalid_request', `The multipart body cannot be read: ${error.message}`)),
      );
      parser.on('close', () => {
        if (failure) return reject(failure);
        if (!writing) {
          return reject(
            new ApiError('invalid_request', 'Send the file in a multipart part named file', { param: 'file' }),
          );
        }
        writing.then(({ bytes, filename }) => {
          refuseUnacceptableText({ ...fields, filename });
          resolve({ bytes, filename, fields });
        }, reject);
      });
      request.pipe(parser);
    });
    return { ...received, path, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
