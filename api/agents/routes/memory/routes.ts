/**
 * Memory (spec 4.4): the caller's long-term memories, listed by importance, searched by keyword (ranking:
 * activities/memory/memory-store.ts), added and deleted. Every endpoint needs a login; another user's memory is
 * answered as one that does not exist (404).
 */
import Router from '@koa/router';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { MemoryStore } from '../../../../activities/memory/memory-store.ts';
import { addMemorySchema, listMemoriesQuery, searchMemoriesQuery } from './schema.ts';

export function memoryRoutes(memories: MemoryStore) {
  const router = new Router<CallerState>();

  router.get('/memory/list', async (context) => {
    const principal = requireCaller(context.state);
    const query = listMemoriesQuery.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    context.body = { memories: await memories.list(principal.userId, query.data.limit) };
  });

  router.get('/memory/search', async (context) => {
    const principal = requireCaller(context.state);
    const query = searchMemoriesQuery.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    context.body = {
      query: query.data.q,
      memories: await memories.search(principal.userId, query.data.q, query.data.limit),
    };
  });

  router.post('/memory/add', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = addMemorySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { created, ...memory } = await memories.add(
      principal.userId,
      parsed.data.content,
      parsed.data.importance,
      'user',
    );
    // The same content again updates the importance of the memory already there (200, not a second one).
    context.status = created ? 201 : 200;
    context.body = memory;
  });

  router.delete('/memory/:id', async (context) => {
    const principal = requireCaller(context.state);
    const id = context.params.id!;
    if (!(await memories.delete(principal.userId, id))) {
      throw new ApiError('not_found', `No memory '${id}'`);
    }
    context.body = { id, deleted: true };
  });

  return router;
}
