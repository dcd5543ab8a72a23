/**
 * Input files of media jobs, checked in the request and stored before the job starts (so a bad input is a 400 that
 * charges and starts nothing, and no image or audio travels through workflow history):
 *
 * - Images (`image_url` or `image_base64`, exactly one): a URL is fetched through the platform's one URL guard
 *   (activities/net/url-guard.ts: http(s) only, no private, loopback, link-local or metadata address, checked again
 *   after every redirect and at connection time), at most 20 MiB within 20 s; base64 (optionally a `data:` URI) is at
 *   most 5 MiB decoded (the JSON body limit is 8 MB). Either way the bytes' real type is sniffed (`sniffImage`: PNG,
 *   JPEG, WebP or GIF) whatever the URL, name or declared type says.
 * - Audio (`audio`, a multipart file part, for speech-to-text): at most 25 MiB (the hosted engine's limit), its type
 *   sniffed by file-type (MP3, WAV or M4A) and its duration read by music-metadata, which prices the job.
 *
 * Every violation is an ApiError `invalid_request` naming the field in `param`.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { fileTypeFromBuffer } from 'file-type';
import type { MediaFiles } from '../../../../activities/media/files.ts';
import { sniffImage } from '../../../../activities/media/local/media-input.ts';
import { FetchGuardError, guardedFetch, ResponseTooLargeError } from '../../../../activities/net/url-guard.ts';
import { ApiError } from '../../../errors.ts';
import { refuseUnacceptableText } from '../../../text-policy.ts';

export const maxImageBase64Bytes = 5 * 1024 * 1024;
export const maxImageUrlBytes = 20 * 1024 * 1024;
export const maxAudioBytes = 25 * 1024 * 1024;
const imageUrlTimeoutMs = 20_000;

export interface MediaInputOptions {
  files: MediaFiles;
  /** Hosts exempt from the URL guard's address rules (FETCH_ALLOWED_HOSTS: tests and benches on loopback). */
  allowedHosts: string[];
}

const refuse = (param: string, message: string) => new ApiError('invalid_request', message, { param });

/** The image of a request, checked and stored: its file name and size. */
export async function storeImageInput(
  body: { image_url?: string | undefined; image_base64?: string | undefined },
  options: MediaInputOptions,
): Promise<{ fileName: string; width: number; height: number }> {
  const given = (['image_url', 'image_base64'] as const).filter((field) => body[field] !== undefined);
  if (given.length !== 1) {
    throw refuse(
      given.length === 0 ? 'image_url' : 'image_base64',
      given.length === 0 ? 'One of image_url or image_base64 is required' : 'Send image_url or image_base64, not both',
    );
  }
  const field = given[0]!;
  const image = await readImage(
    field === 'image_url' ? { url: body.image_url! } : { base64: body.image_base64! },
    field,
    options,
  );
  const fileName = await options.files.save(image.bytes, image.mime, { kind: 'input' });
  return { fileName, width: image.width, height: image.height };
}

/**
 * An image from a URL (fetched through the URL guard) or base64 (optionally a `data:` URI), its type sniffed from
 * its bytes; every refusal names `param`.
 */
export async function readImage(
  source: { url: string } | { base64: string },
  param: string,
  options: Pick<MediaInputOptions, 'allowedHosts'>,
): Promise<{ bytes: Uint8Array; mime: string; width: number; height: number }> {
  const bytes = 'url' in source ? await fetchImage(source.url, param, options) : decodeBase64(source.base64, param);
  const image = await sniffImage(bytes);
  if (!image) throw refuse(param, `${param} is not a PNG, JPEG, WebP or GIF image`);
  return { bytes, mime: image.mime, width: image.width, height: image.height };
}

function decodeBase64(value: string, param: string): Uint8Array {
  const payload = value.replace(/^data:[\w.+-]+\/[\w.+-]+;base64,/, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(payload) || payload.length === 0) {
    throw refuse(param, `${param} is not valid base64`);
  }
  if (Math.floor((payload.length * 3) / 4) > maxImageBase64Bytes + 2) {
    throw refuse(param, `${param} is larger than ${maxImageBase64Bytes / 1024 / 1024} MiB`);
  }
  return new Uint8Array(Buffer.from(payload, 'base64'));
}

async function fetchImage(
  url: string,
  param: string,
  options: Pick<MediaInputOptions, 'allowedHosts'>,
): Promise<Uint8Array> {
  try {
    const response = await guardedFetch(url, {
      maxBytes: maxImageUrlBytes,
      timeoutMs: imageUrlTimeoutMs,
      allowedHosts: options.allowedHosts,
      headers: { accept: 'image/*' },
    });
    if (response.status < 200 || response.status > 299) {
      throw refuse(param, `${param} answered HTTP ${response.status}`);
    }
    return new Uint8Array(response.body);
  } catch (error) {
    if (error instanceof ResponseTooLargeError) {
      throw refuse(param, `${param} is larger than ${maxImageUrlBytes / 1024 / 1024} MiB`);
    }
    if (!(error instanceof FetchGuardError)) throw error;
    throw refuse(param, `${param} cannot be fetched: ${error.message}`);
  }
}

/** Audio types the transcription engine takes, by the type file-type sniffs. */
const audioTypes: Record<string, string> = {
  'audio/mpeg': 'audio/mpeg',
  'audio/wav': 'audio/wav',
  'audio/x-wav': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'audio/x-m4a': 'audio/mp4',
  'audio/mp4': 'audio/mp4',
  'video/mp4': 'audio/mp4',
};

/**
 * A multipart/form-data request with one `audio` file part and text fields: the audio checked and stored, the
 * fields returned for their schema.
 */
export async function storeAudioUpload(
  request: IncomingMessage,
  options: MediaInputOptions,
): Promise<{
  fileName: string;
  contentType: string;
  durationSeconds: number;
  /** The audio's SHA-256 (hex): what an idempotent repeat is compared by. */
  sha256: string;
  fields: Record<string, string>;
}> {
  if (!/^multipart\/form-data/i.test(request.headers['content-type'] ?? '')) {
    throw refuse('audio', 'Send multipart/form-data with the audio file in the part named audio');
  }
  const { audio, fields } = await readMultipart(request);
  // Multipart fields bypass the JSON body check (api/text-policy.ts): the same rule, before anything is stored.
  refuseUnacceptableText(fields);
  if (!audio) throw refuse('audio', 'The audio file (part audio) is required');
  const sniffed = await fileTypeFromBuffer(audio);
  const contentType = sniffed ? audioTypes[sniffed.mime] : undefined;
  if (!contentType) throw refuse('audio', 'audio is not an MP3, WAV or M4A file');
  let durationSeconds: number | undefined;
  try {
    // Imported at the first transcription, not at the process's start (issue 29).
    const { parseBuffer } = await import('music-metadata');
    durationSeconds = (await parseBuffer(audio, { mimeType: contentType }, { duration: true })).format.duration;
  } catch {
    durationSeconds = undefined;
  }
  if (durationSeconds === undefined || !Number.isFinite(durationSeconds) || durationSeconds <= 0) {
    throw refuse('audio', 'The duration of the audio cannot be read: the file is damaged or empty');
  }
  const fileName = await options.files.save(audio, contentType, { kind: 'input' });
  const sha256 = createHash('sha256').update(audio).digest('hex');
  return { fileName, contentType, durationSeconds, sha256, fields };
}

function readMultipart(request: IncomingMessage): Promise<{ audio?: Uint8Array; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: { files: 1, fileSize: maxAudioBytes, fields: 10, fieldSize: 1024 },
      });
    } catch (error) {
      reject(refuse('audio', `The multipart body cannot be read: ${(error as Error).message}`));
      return;
    }
    const fields: Record<string, string> = {};
    let audio: Uint8Array | undefined;
    let failure: ApiError | undefined;
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      if (name !== 'audio') {
        failure ??= refuse(name, `Unexpected file part ${name}: the audio goes in the part named audio`);
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => {
        failure ??= refuse('audio', `audio is larger than ${maxAudioBytes / 1024 / 1024} MiB`);
      });
      stream.on('end', () => {
        audio = new Uint8Array(Buffer.concat(chunks));
      });
    });
    parser.on('filesLimit', () => {
      failure ??= refuse('audio', 'Send one audio file');
    });
    parser.on('error', (error: Error) =>
      reject(refuse('audio', `The multipart body cannot be read: ${error.message}`)),
    );
    parser.on('close', () => (failure ? reject(failure) : resolve({ ...(audio ? { audio } : {}), fields })));
    request.pipe(parser);
  });
}
