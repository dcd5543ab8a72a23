/**
 * Multipart bodies with one file part named `file` (busboy), for every route that takes a file: the agent service's
 * uploads and the gateway's Files API. `readOneFile` owns what they share: the parser and its limits, one part named
 * `file` (another name or a second file is a 400), text fields through the one text policy (api/text-policy.ts), and
 * the body's own errors as 400s; the route's `consume` takes the file's stream. `receiveFile` is the consumer for a
 * route that must read the whole file before it decides (the Files API checks every line), whatever order the parts
 * come in: the file goes to a temporary file, never whole into memory, refused past `maxBytes` as it streams in (413).
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

/** The file part as busboy announces it, and the text fields that came before it. */
export interface FilePart {
  stream: Readable;
  filename: string | undefined;
  fieldsSoFar: Record<string, string>;
}

/**
 * Reads a multipart body whose one file part `consume` takes (it must read or drain the stream); resolves with what
 * `consume` made and every text field, once the body has ended.
 */
export function readOneFile<T>(
  request: IncomingMessage,
  limits: { fileSize: number; fields: number; fieldSize: number },
  consume: (part: FilePart) => Promise<T>,
): Promise<{ value: T; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: request.headers, limits: { files: 1, ...limits } });
    } catch (error) {
      reject(new ApiError('invalid_request', `The multipart body cannot be read: ${(error as Error).message}`));
      return;
    }
    const fields: Record<string, string> = {};
    let consuming: Promise<T> | undefined;
    let failure: unknown;
    parser.on('field', (name, value) => void (fields[name] = value));
    parser.on('file', (name, stream: Readable, info) => {
      if (name !== 'file' || consuming) {
        failure ??= new ApiError('invalid_request', `Send one file, in the part named file (got ${name})`, {
          param: 'file',
        });
        stream.resume();
        return;
      }
      try {
        refuseUnacceptableText(fields);
        consuming = consume({ stream, filename: info.filename, fieldsSoFar: { ...fields } });
        // Keep the promise's rejection handled until 'close' reports it.
        consuming.catch(() => stream.resume());
      } catch (error) {
        failure ??= error;
        stream.resume();
      }
    });
    parser.on('filesLimit', () => {
      failure ??= new ApiError('invalid_request', 'Send one file per request', { param: 'file' });
    });
    parser.on('error', (error: Error) =>
      reject(new ApiError('invalid_request', `The multipart body cannot be read: ${error.message}`)),
    );
    parser.on('close', () => {
      if (failure) return reject(failure);
      if (!consuming) {
        return reject(
          new ApiError('invalid_request', 'Send the file in a multipart part named file', { param: 'file' }),
        );
      }
      consuming.then((value) => {
        refuseUnacceptableText(fields);
        resolve({ value, fields });
      }, reject);
    });
    request.pipe(parser);
  });
}

export interface ReceivedFile {
  path: string;
  bytes: number;
  /** The file name the client gave (its last path segment). */
  filename: string;
  fields: Record<string, string>;
  cleanup(): Promise<void>;
}

/** The one file of a multipart body, received to a temporary file; the caller calls `cleanup()` once done. */
export async function receiveFile(request: IncomingMessage, options: { maxBytes: number }): Promise<ReceivedFile> {
  const folder = await mkdtemp(join(tmpdir(), 'tessera-file-'));
  const path = join(folder, 'file');
  const cleanup = () => rm(folder, { recursive: true, force: true });
  try {
    const { value, fields } = await readOneFile(
      request,
      { fileSize: options.maxBytes, fields: 10, fieldSize: 4096 },
      async ({ stream, filename }) => {
        let bytes = 0;
        let truncated = false;
        stream.on('data', (chunk: Buffer) => void (bytes += chunk.length));
        stream.on('limit', () => void (truncated = true));
        await pipeline(stream, createWriteStream(path));
        if (truncated) {
          throw new ApiError('payload_too_large', `The file is larger than the limit of ${options.maxBytes} bytes`, {
            param: 'file',
          });
        }
        const name = (filename ?? 'file').split(/[\\/]/).pop() || 'file';
        refuseUnacceptableText({ filename: name });
        return { bytes, filename: name };
      },
    );
    return { ...value, fields, path, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
