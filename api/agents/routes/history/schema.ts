/** Path and query parameters of the history, sessions, search and usage endpoints (api/agents/routes/history/). */
import { z } from 'zod';
import { historyCursorPattern } from '../../../../activities/conversations/conversation-store.ts';
import { chatTurnIdPattern } from '../../../../common/chat-turn.ts';

/** A session id as clients name it (`web:<uuid>`, `api:default`, …). */
export const sessionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9:_.@-]{1,128}$/, '1 to 128 characters among A-Z a-z 0-9 : _ . @ -');

/** `GET /history/{session_id}`: `limit` messages (default 100, at most 500) before the cursor `before`. */
export const historyQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(100),
    before: z
      .string()
      .regex(historyCursorPattern, 'a message cursor (the `cursor` or `next_before` of a history page)')
      .transform((cursor) => {
        const [, turn, seq] = historyCursorPattern.exec(cursor)!;
        return { turn: Number(turn), seq: Number(seq) };
      })
      .optional(),
  })
  .strict();

/** `GET /search/messages`: `q` in web-search syntax (1 to 500 characters), `limit` results (default 20, at most 100). */
export const searchQuerySchema = z
  .object({
    q: z.string().trim().min(1, 'give q, the words to search for').max(500),
    limit: z.coerce.number().int().min(1).max(100).default(20),
  })
  .strict();

/** `PUT /sessions/{session_id}/branch`: a turn of the session whose branch to show (its newest turn below it). */
export const branchBodySchema = z
  .object({ turn_id: z.string().regex(chatTurnIdPattern, 'must be a turn id of the session (chat-…)') })
  .strict();

/** `PATCH /sessions/{session_id}`: the session's own title (1 to 200 characters), or null to show its first message. */
export const renameSessionSchema = z
  .object({ title: z.string().trim().min(1, 'give a title, or null to clear it').max(200).nullable() })
  .strict();
