/**
 * The Files API (OpenAI's `/v1/files`): `POST /v1/files` (multipart: `file`, `purpose: batch`), `GET /v1/files`
 * (`purpose`, `after`, `limit`, `order`), `GET /v1/files/{id}`, `GET /v1/files/{id}/content`, `DELETE /v1/files/{id}`.
 * Owner-only: another user's file is answered as one that does not exist. The rules are the store's
 * (activities/files/api-files.ts); the multipart body is received to a temporary file (api/multipart.ts).
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { presentPage } from '../../../openapi/contract.ts';
import { receiveFile } from '../../../multipart.ts';
import { FileRefused, type ApiFileRecord, type ApiFileStore } from '../../../../activities/files/api-files.ts';
import { listQuerySchema, purposeSchema } from './schema.ts';

export function presentFile(file: ApiFileRecord) {
  return {
    id: file.id,
    object: 'file' as const,
    bytes: file.bytes,
    created_at: Math.floor(file.createdAt.getTime() / 1000),
    filename: file.filename,
    purpose: file.purpose,
    status: 'processed' as const,
    expires_at: null,
    status_details: null,
  };
}

export function fileRoutes(files: ApiFileStore) {
  const router = new Router<AuthState>();

  router.post('/v1/files', async (context) => {
    if (!context.is('multipart/form-data')) {
      throw new ApiError('invalid_request', 'Send the file as multipart/form-data, with a purpose field');
    }
    const received = await receiveFile(context.req, { maxBytes: files.maxBytes });
    try {
      const purpose = purposeSchema.safeParse(received.fields.purpose);
      if (!purpose.success) throw invalidRequest(purpose.error);
      const saved = await files
        .save(context.state.principal.userId, { ...received, purpose: purpose.data })
        .catch((error: unknown) => {
          if (error instanceof FileRefused)
            throw new ApiError('invalid_request', error.message, { param: error.param });
          throw error;
        });
      context.body = presentFile(saved);
    } finally {
      await received.cleanup();
    }
  });

  router.get('/v1/files', async (context) => {
    const query = listQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const { purpose, after, limit = 10_000, order = 'desc' } = query.data;
    const { files: listed, hasMore } = await files.list(context.state.principal.userId, {
      purpose,
      after,
      limit,
      order,
    });
    context.body = presentPage(listed.map(presentFile), hasMore);
  });

  router.get('/v1/files/:id', async (context) => {
    const file = await files.get(context.state.principal.userId, context.params.id!);
    if (!file) throw new ApiError('not_found', `No file ${context.params.id}`);
    context.body = presentFile(file);
  });

  router.get('/v1/files/:id/content', async (context) => {
    const opened = await files.open(context.state.principal.userId, context.params.id!);
    if (!opened) throw new ApiError('not_found', `No file ${context.params.id}`);
    context.type = 'application/jsonl';
    context.length = opened.file.bytes;
    context.body = opened.stream;
  });

  router.delete('/v1/files/:id', async (context) => {
    const deleted = await files.delete(context.state.principal.userId, context.params.id!);
    if (!deleted) throw new ApiError('not_found', `No file ${context.params.id}`);
    context.body = { id: context.params.id, object: 'file', deleted: true };
  });

  return router;
}
