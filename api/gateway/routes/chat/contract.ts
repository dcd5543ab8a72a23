/** Contracts of the session chat, the sessions and the integrations list (api/openapi/contract.ts). */
import { z } from 'zod';
import { chatRequestSchema, chatStreamEvents } from '../../../../common/chat-turn.ts';
import { usageSchema } from '../../../../common/chat.ts';
import { isoDate, json, namedEvents, route, eventStream } from '../../../openapi/contract.ts';

const tags = ['Session chat'];

/** A `/link` command typed in the chat is answered at once, in the same events without a turn. */
const linkCommand = { session_id: z.string(), command: z.literal('link') };

export const chatStream = namedEvents('ChatStreamEvent', {
  ...chatStreamEvents,
  start: z.union([chatStreamEvents.start, z.object(linkCommand)]),
  done: z.union([chatStreamEvents.done, z.object({ ...linkCommand, credits: z.literal(0) })]),
});

const chatAnswer = z.union([
  z.strictObject({
    response: z.string(),
    session_id: z.string(),
    turn_id: z.string(),
    model: z.string(),
    usage: usageSchema,
    credits: z.number(),
    tool_calls: z.array(z.strictObject({ tool: z.string(), ok: z.boolean() })),
  }),
  z.strictObject({ response: z.string(), session_id: z.string(), command: z.literal('link') }),
]);

const guestNote =
  'Without a key the caller chats as a guest: `session_id` is then required and must be at least 16 characters (guest sessions are reached by id alone).';

const turnErrors = {
  402: 'Not enough credits',
  403: 'The model is outside the caller’s plan',
  404: 'No such model',
  409: 'The session has a turn running (a concurrent turn waits; a conflict is reported as such)',
  502: 'The model call failed',
  503: 'No provider available',
} as const;

const session = z.strictObject({
  key: z.string(),
  resolved_key: z.string(),
  messages: z.array(
    z.strictObject({ role: z.string(), content: z.string().nullable(), channel: z.string(), created_at: isoDate }),
  ),
  message_count: z.number().int(),
});

export const chatContracts = [
  route({
    method: 'POST',
    path: '/api/v1/chat',
    summary: 'Send a message, get the turn’s answer',
    description: `The session keeps the conversation; the turn may call built-in tools. ${guestNote}`,
    tags,
    access: 'optional',
    request: { body: chatRequestSchema },
    responses: { 200: json(chatAnswer, 'The answer (`X-Turn-Id` names the turn)') },
    errors: turnErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/chat/stream',
    summary: 'Send a message, stream the turn',
    description: `Named events (start, content, thinking, tool_start, tool_result, done, error), resumable at \`GET /api/v1/chat/turns/{id}/stream\`. ${guestNote}`,
    tags,
    access: 'optional',
    request: { body: chatRequestSchema },
    responses: { 200: eventStream(chatStream, 'The turn’s events') },
    errors: turnErrors,
  }),
  route({
    method: 'GET',
    path: '/api/v1/chat/turns/:id/stream',
    summary: 'Resume a turn’s stream',
    tags,
    access: 'optional',
    request: {
      query: z.object({ after: z.string().optional() }),
      headers: z.object({ 'last-event-id': z.string().optional() }),
    },
    responses: { 200: eventStream(chatStream, 'The turn’s events after the given one') },
    errors: { 404: 'No such turn of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/sessions',
    summary: 'The caller’s sessions',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          object: z.literal('list'),
          data: z.array(
            z.strictObject({
              key: z.string(),
              resolved_key: z.string(),
              channels: z.array(z.string()),
              message_count: z.number().int(),
              last_activity: isoDate.nullable(),
              created_at: isoDate,
            }),
          ),
          total: z.number().int(),
        }),
        'The sessions',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/sessions/:id',
    summary: 'One session with its messages',
    tags,
    access: 'optional',
    responses: { 200: json(session, 'The session') },
    errors: { 404: 'No such session of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/sessions/:id/link',
    summary: 'Deep links that open LINE or Telegram linked to this session',
    tags: ['Messaging apps'],
    access: 'optional',
    responses: {
      200: json(
        z.strictObject({
          session_id: z.string(),
          code: z.string().nullable(),
          expires_at: isoDate.nullable(),
          links: z.record(z.string(), z.string()),
        }),
        'The links, by messaging app, and the link code when one was issued',
      ),
    },
    errors: { 404: 'No such session of the caller’s' },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/sessions/:id',
    summary: 'Delete a session',
    tags,
    access: 'optional',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Deleted') },
    errors: { 404: 'No such session of the caller’s', 409: 'A turn of the session is still running' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/integrations',
    summary: 'The built-in tools and channels, and which are configured',
    tags: ['Session chat'],
    access: 'public',
    responses: {
      200: json(
        z.strictObject({
          object: z.literal('list'),
          tools: z.array(
            z.strictObject({
              name: z.string(),
              type: z.literal('tool'),
              description: z.string(),
              configured: z.boolean(),
              parameters: z.record(z.string(), z.unknown()).meta({ description: 'JSON schema of the arguments' }),
              timeout_ms: z.number().int(),
            }),
          ),
          channels: z.array(z.strictObject({ name: z.string(), type: z.literal('channel'), configured: z.boolean() })),
          active: z.array(z.string()),
        }),
        'Tools and channels',
      ),
    },
  }),
];
