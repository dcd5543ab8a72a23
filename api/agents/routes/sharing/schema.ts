/**
 * Requests and responses of sharing and export (api/agents/routes/sharing/routes.ts): `POST`/`DELETE
 * /share/{session_id}`, `GET /s/{token}` and `GET /export/{session_id}`.
 */
import { z } from 'zod';
import { sessionIdSchema } from '../history/schema.ts';

export { sessionIdSchema };

/** The longest a link may live: a year. */
export const maxShareSeconds = 365 * 86_400;

/** `POST /share/{session_id}`: an optional lifetime; without one the link lives until revoked. */
export const shareBodySchema = z
  .strictObject({
    expires_in_seconds: z
      .number('must be a number of seconds')
      .int('must be a whole number of seconds')
      .min(1)
      .max(maxShareSeconds, `must be at most ${maxShareSeconds} (a year)`)
      .optional(),
  })
  .default({});

/** A share link's token in its path: 32 random bytes, base64url (43 characters). */
export const shareTokenSchema = z.string().regex(/^[A-Za-z0-9_-]{43}$/);

/** `POST /share/{session_id}` (201): the link, whose token is shown this once (only its hash is kept). */
export const shareResponseSchema = z.object({
  share_id: z.string(),
  session_id: z.string(),
  url: z.url(),
  token: z.string(),
  /** Messages the link shows: the conversation's as they were when the link was made. */
  message_count: z.number().int(),
  created_at: z.iso.datetime(),
  expires_at: z.iso.datetime().nullable(),
});

/** `DELETE /share/{session_id}`: every live link of the session is revoked. */
export const revokeResponseSchema = z.object({ session_id: z.string(), revoked: z.number().int() });

/** One message of a shared conversation: what the people in it said, and which tools were used (no arguments). */
export const sharedMessageSchema = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string().nullable(),
  created_at: z.iso.datetime(),
  agent_id: z.string().optional(),
  /** The names of the tools this answer called (their arguments and results are never shown). */
  tools_used: z.array(z.string()).optional(),
});

/** `GET /s/{token}` with `Accept: application/json` (the HTML page shows the same). */
export const sharedConversationSchema = z.object({
  title: z.string().nullable(),
  shared_at: z.iso.datetime(),
  expires_at: z.iso.datetime().nullable(),
  messages: z.array(sharedMessageSchema),
});

/** `GET /export/{session_id}?format=md|json` (default md). */
export const exportQuerySchema = z.strictObject({
  format: z.enum(['md', 'json'], 'must be md or json').default('md'),
});

export const toolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.string() });

export const exportedMessageSchema = z.object({
  turn: z.number().int(),
  seq: z.number().int(),
  role: z.enum(['user', 'assistant', 'tool']),
  content: z.string().nullable(),
  channel: z.string(),
  created_at: z.iso.datetime(),
  agent_id: z.string().optional(),
  /** An assistant message's tool calls, with their arguments as the model wrote them. */
  tool_calls: z.array(toolCallSchema).optional(),
  /** A tool message: the call it answers, and the tool. */
  tool_call_id: z.string().optional(),
  tool_name: z.string().optional(),
});

export const exportedTurnSchema = z.object({
  turn: z.number().int(),
  status: z.enum(['running', 'done', 'failed']),
  agent_id: z.string().nullable(),
  started_at: z.iso.datetime(),
  finished_at: z.iso.datetime().nullable(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  credits: z.number().int(),
  cost_usd: z.number(),
  models: z.array(z.string()),
});

/** `GET /export/{session_id}?format=json`: every message, tool call and cost of the session's conversation. */
export const exportedConversationSchema = z.object({
  format: z.literal('tessera.conversation.v1'),
  session_id: z.string(),
  title: z.string().nullable(),
  channels: z.array(z.string()),
  created_at: z.iso.datetime(),
  exported_at: z.iso.datetime(),
  messages: z.array(exportedMessageSchema),
  turns: z.array(exportedTurnSchema),
  /** The totals, as `GET /usage/{session_id}` gives them. */
  usage: z.object({
    turns: z.number().int(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    credits: z.number().int(),
    cost_usd: z.number(),
  }),
});

export type ShareResponse = z.infer<typeof shareResponseSchema>;
export type SharedConversation = z.infer<typeof sharedConversationSchema>;
export type SharedMessage = z.infer<typeof sharedMessageSchema>;
export type ExportedConversation = z.infer<typeof exportedConversationSchema>;
export type ExportedMessage = z.infer<typeof exportedMessageSchema>;
