/**
 * Files (spec §4.9; docs/files-and-rag.md): `POST /upload` (multipart, one part named `file`; or JSON
 * `{file_name, content_base64}`), `GET /upload` (the caller's files and quota), `GET /upload/{file_id}` (metadata as
 * JSON; the bytes with `?download=1` or an `Accept` naming the file's type), `DELETE /upload/{file_id}` (the file and
 * everything indexed from it). Every route needs a login; another user's file is answered as one that does not exist.
 * The rules (type from the bytes, size, quota, streaming) are the store's: activities/uploads/upload-store.ts.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { UploadRefused, type UploadRecord, type UploadStore } from '../../../../activities/uploads/upload-store.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { readOneFile } from '../../../multipart.ts';
import { refuseUnacceptableText } from '../../../text-policy.ts';
import { base64UploadSchema, downloadQuerySchema, fileIdPattern, fileNameSchema, listQuerySchema } from './schema.ts';

/** What a file looks like to a client. `extra` adds what other areas know of it (its RAG index). */
export function presentUpload(file: UploadRecord, extra: Record<string, unknown> = {}) {
  return {
    id: file.id,
    object: 'file',
    file_name: file.fileName,
    kind: file.kind,
    content_type: file.contentType,
    bytes: file.bytes,
    sha256: file.sha256,
    created_at: file.createdAt.toISOString(),
    download_url: `/upload/${file.id}?download=1`,
    ...extra,
  };
}

export function uploadRoutes(dependencies: {
  uploads: UploadStore;
  /** What else to say of each file (the RAG index's status), keyed by file id. */
  describe?: (userId: string, fileIds: string[]) => Promise<Map<string, Record<string, unknown>>>;
}) {
  const { uploads } = dependencies;
  const describe = dependencies.describe ?? (async () => new Map<string, Record<string, unknown>>());
  const router = new Router<CallerState>();

  router.post('/upload', async (context) => {
    const principal = requireCaller(context.state);
    const saved = context.is('multipart/form-data')
      ? await saveMultipart(uploads, principal.userId, context.req)
      : await saveBase64(uploads, principal.userId, context.request.body);
    context.status = 201;
    context.set('Location', `/upload/${saved.id}`);
    context.body = presentUpload(saved, (await describe(principal.userId, [saved.id])).get(saved.id));
  });

  router.get('/upload', async (context) => {
    const principal = requireCaller(context.state);
    const query = listQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const { limit } = query.data;
    const [files, used] = await Promise.all([
      limit === 0 ? [] : uploads.list(principal.userId, limit),
      uploads.usedBytes(principal.userId),
    ]);
    const extra = files.length
      ? await describe(
          principal.userId,
          files.map((file) => file.id),
        )
      : new Map<string, Record<string, unknown>>();
    context.body = {
      files: files.map((file) => presentUpload(file, extra.get(file.id))),
      used_bytes: used,
      quota_bytes: uploads.quotaBytes,
      max_file_bytes: uploads.maxFileBytes,
    };
  });

  router.get('/upload/:file_id', async (context) => {
    const principal = requireCaller(context.state);
    const query = downloadQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const file = await found(uploads.open(principal.userId, context.params.file_id!), context.params.file_id!);
    const download =
      query.data.download === '1' ||
      query.data.download === 'true' ||
      (query.data.download === undefined && context.accepts('application/json', file.contentType) === file.contentType);
    if (!download) {
      context.body = presentUpload(file, (await describe(principal.userId, [file.id])).get(file.id));
      return;
    }
    // Always an attachment, never rendered by the browser on this origin; the type is what the bytes are.
    context.set('Content-Disposition', contentDisposition(file.fileName));
    context.set('X-Content-Type-Options', 'nosniff');
    context.set('Content-Security-Policy', "sandbox; default-src 'none'");
    context.set('ETag', `"${file.sha256}"`);
    context.type = file.contentType;
    context.length = file.bytes;
    context.body = await file.stream();
  });

  router.delete('/upload/:file_id', async (context) => {
    const principal = requireCaller(context.state);
    const id = context.params.file_id!;
    if (!fileIdPattern.test(id) || !(await uploads.delete(principal.userId, id))) throw notFound(id);
    context.body = { id, object: 'file', deleted: true };
  });

  return router;
}

async function found<T>(lookup: Promise<T | null>, id: string): Promise<T> {
  if (!fileIdPattern.test(id)) throw notFound(id);
  const file = await lookup;
  if (!file) throw notFound(id);
  return file;
}

const notFound = (id: string) => new ApiError('not_found', `No file ${id}`, { param: 'file_id' });

/** The store's refusal as the API's error: 413 for size and quota, 415 for a type the platform does not read. */
function refusal(error: unknown): unknown {
  if (!(error instanceof UploadRefused)) return error;
  if (error.reason === 'unsupported_type')
    return new ApiError('unsupported_media_type', error.message, { param: 'file' });
  return new ApiError('payload_too_large', error.message, { param: 'file' });
}

async function saveBase64(uploads: UploadStore, userId: string, body: unknown): Promise<UploadRecord> {
  const parsed = base64UploadSchema.safeParse(body ?? {});
  if (!parsed.success) throw invalidRequest(parsed.error);
  const encoded = parsed.data.content_base64.replace(/^data:[^,]*;base64,/, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(encoded.replace(/\s+/g, ''))) {
    throw new ApiError('invalid_request', 'content_base64 is not base64', { param: 'content_base64' });
  }
  const bytes = Buffer.from(encoded, 'base64');
  return uploads.save(userId, parsed.data.file_name, bytes).catch((error: unknown) => {
    throw refusal(error);
  });
}

/**
 * Streams the one file part into the store as it arrives (the store counts, hashes and refuses past the limit), so a
 * large file is never held in memory. Text fields (`file_name`) may come before the file part. The body's rules are
 * api/multipart.ts's.
 */
async function saveMultipart(uploads: UploadStore, userId: string, request: IncomingMessage): Promise<UploadRecord> {
  // One byte past the limit, so the store sees a file that is too large and refuses it by name.
  const limits = { fileSize: uploads.maxFileBytes + 1, fields: 5, fieldSize: 1024 };
  const { value } = await readOneFile(request, limits, async ({ stream, filename, fieldsSoFar }) => {
    const fileName = fileNameSchema.safeParse(fieldsSoFar.file_name ?? filename ?? 'upload');
    if (!fileName.success) throw invalidRequest(fileName.error);
    refuseUnacceptableText({ file_name: fileName.data });
    const through = new PassThrough();
    stream.pipe(through);
    return uploads.save(userId, fileName.data, through).catch((error: unknown) => {
      throw refusal(error);
    });
  });
  return value;
}

/** `attachment` with the name as given (RFC 6266: an ASCII fallback, and the UTF-8 name in `filename*`). */
function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
