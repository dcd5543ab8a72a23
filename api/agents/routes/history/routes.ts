/**
 * The read side of the agent service's chat (spec 4.1 and 4.8): a session's history, the caller's sessions, full-text
 * search across them, and a session's usage and cost. Every endpoint needs a login (cookie or key) and sees only the
 * caller's own sessions (`user:<id>` in the shared conversation store, so the gateway's `/api/v1/chat` sessions show
 * here too); another user's session answers 404, as one that does not exist.
 *
 * - `GET /history/{session_id}?limit=&before=`: `{session_id, messages, message_count, next_before}`, messages
 *   oldest first, each `{role, content, channel, agent_id?, tool_name?, created_at, cursor}`; the newest `limit`
 *   (default 100, at most 500) before `before` (a message's `cursor`, or the previous page's `next_before`, which
 *   is null on the oldest page). `message_count` counts the whole session.
 * - `GET /sessions`: `{sessions: [{session_id, title, channels, message_count, last_activity, created_at}]}`, most
 *   recently active first; `title` is the first user message cut to 80 characters.
 * - `GET /search/messages?q=&limit=`: `{query, results: [{session_id, role, channel, snippet, created_at, rank}],
 *   total}` (PostgreSQL full-text search, see `ConversationStore.searchMessages`); matches in `snippet` are wrapped
 *   in « and ».
 * - `GET /usage/{session_id}`: `{session_id, turns, input_tokens, output_tokens, credits, cost_usd, by_model}`
 *   (api/services/usage/service.ts).
 * - `PATCH /sessions/{session_id}` `{title}`: the session's own title (1 to 200 characters), shown by `/sessions`
 *   instead of its first message; `null` clears it. `{session_id, title}`.
 * - `DELETE /sessions/{session_id}`: deletes the session as the gateway's `DELETE /api/v1/sessions/{id}` does (the same
 *   `ChatService.deleteSession`: its messages, and the conversation when no other session shares it); 409 while a
 *   turn of it runs. `{session_id, deleted: true}`.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { UsageService } from '../../../services/usage/service.ts';
import type { ChatService } from '../../../services/chat/service.ts';
import {
  branchBodySchema,
  historyQuerySchema,
  renameSessionSchema,
  searchQuerySchema,
  sessionIdSchema,
} from './schema.ts';

type HistoryContext = Context & { state: CallerState; params: Record<string, string> };

/** The caller's conversation-store owner and the session id of the path (400 when malformed). */
function sessionOf(context: HistoryContext): { owner: string; key: string } {
  const principal = requireCaller(context.state);
  const parsed = sessionIdSchema.safeParse(context.params.session_id);
  if (!parsed.success) {
    throw new ApiError('invalid_request', `session_id: ${parsed.error.issues[0]!.message}`, { param: 'session_id' });
  }
  return { owner: `user:${principal.userId}`, key: parsed.data };
}

const noSuchSession = (key: string) => new ApiError('not_found', `No session ${key}`, { param: 'session_id' });

export function historyRoutes(dependencies: {
  conversations: ConversationStore;
  usage: UsageService;
  chat: Pick<ChatService, 'deleteSession'>;
}) {
  const { conversations, usage } = dependencies;
  const router = new Router<CallerState>();

  router.get('/history/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const query = historyQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const page = await conversations.historyPage(owner, key, query.data);
    if (!page) throw noSuchSession(key);
    context.body = {
      session_id: page.key,
      messages: page.messages,
      message_count: page.message_count,
      next_before: page.next_before,
      turns: page.turns,
    };
  });

  router.put('/sessions/:session_id/branch', async (context) => {
    const { owner, key } = sessionOf(context);
    const body = branchBodySchema.safeParse(context.request.body ?? {});
    if (!body.success) throw invalidRequest(body.error);
    const head = await conversations.switchBranch(owner, key, body.data.turn_id);
    if (!head) throw new ApiError('not_found', `No turn ${body.data.turn_id} in session ${key}`, { param: 'turn_id' });
    context.body = { session_id: key, turn_id: head };
  });

  router.get('/sessions', async (context) => {
    const principal = requireCaller(context.state);
    const sessions = await conversations.sessionOverviews(`user:${principal.userId}`);
    context.body = {
      sessions: sessions.map(({ key, ...session }) => ({ session_id: key, ...session })),
    };
  });

  router.get('/search/messages', async (context) => {
    const principal = requireCaller(context.state);
    const query = searchQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const found = await conversations.searchMessages(`user:${principal.userId}`, query.data.q, query.data.limit);
    context.body = {
      query: query.data.q,
      results: found.results.map(({ key, ...hit }) => ({ session_id: key, ...hit })),
      total: found.total,
    };
  });

  router.get('/usage/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const found = await usage.forSession(owner, key);
    if (!found) throw noSuchSession(key);
    context.body = found;
  });

  router.patch('/sessions/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const body = renameSessionSchema.safeParse(context.request.body ?? {});
    if (!body.success) throw invalidRequest(body.error);
    if (!(await conversations.renameSession(owner, key, body.data.title))) throw noSuchSession(key);
    context.body = { session_id: key, title: body.data.title };
  });

  router.delete('/sessions/:session_id', async (context) => {
    const { key } = sessionOf(context);
    const deleted = await dependencies.chat.deleteSession({ principal: requireCaller(context.state) }, key);
    if (deleted === 'not_found') throw noSuchSession(key);
    if (deleted === 'busy')
      throw new ApiError('conflict', `Session ${key} has a turn still running; delete it once it ends`);
    context.body = { session_id: key, deleted: true };
  });

  return router;
}
