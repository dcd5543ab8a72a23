/**
 * RAG (spec §4.9; docs/files-and-rag.md): `POST /rag/index` (`{file_id}` or `{text, title}`, optional
 * `language` of an image's text) answers 202 with the index, which a durable workflow builds; `GET /rag/index/{id}`
 * its status and progress; `GET /rag/index` the caller's indexes; `GET /rag/search?q=&k=&file_id=` the caller's
 * nearest chunks. Every route needs a login; another user's index or file is answered as one that does not exist.
 */
import Router from '@koa/router';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import { presentHit, presentIndex, type RagService } from '../../../services/rag/service.ts';
import { indexBodySchema, indexIdPattern, searchQuerySchema } from './schema.ts';
import { ApiError } from '../../../errors.ts';

export function ragRoutes(rag: RagService) {
  const router = new Router<CallerState>();

  router.post('/rag/index', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = indexBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const document = await rag.index(principal.userId, parsed.data);
    context.status = 202;
    context.set('Location', `/rag/index/${document.id}`);
    context.body = presentIndex(document);
  });

  router.get('/rag/index', async (context) => {
    const principal = requireCaller(context.state);
    context.body = { indexes: (await rag.list(principal.userId)).map(presentIndex) };
  });

  router.get('/rag/index/:index_id', async (context) => {
    const principal = requireCaller(context.state);
    const id = context.params.index_id!;
    if (!indexIdPattern.test(id)) throw new ApiError('not_found', `No index ${id}`, { param: 'index_id' });
    context.body = presentIndex(await rag.status(principal.userId, id));
  });

  router.get('/rag/search', async (context) => {
    const principal = requireCaller(context.state);
    const query = searchQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const hits = await rag.search(principal.userId, {
      q: query.data.q,
      k: query.data.k,
      ...(query.data.file_id ? { fileId: query.data.file_id } : {}),
    });
    context.body = { query: query.data.q, results: hits.map(presentHit) };
  });

  return router;
}
