/** Contracts of history, sessions, search and usage (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import {
  branchBodySchema,
  historyQuerySchema,
  renameSessionSchema,
  searchQuerySchema,
  sessionIdSchema,
} from './schema.ts';

const tags = ['History'];
const sessionParams = z.object({ session_id: sessionIdSchema });
/** An uploaded file a turn's message carried, as the history names it. */
const attachment = z.strictObject({ file_id: z.string(), file_name: z.string(), content_type: z.string() });

export const historyContracts = [
  route({
    method: 'GET',
    path: '/history/:session_id',
    summary: 'A page of a session’s messages, oldest first',
    tags,
    access: 'caller',
    request: { params: sessionParams, query: historyQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          session_id: z.string(),
          messages: z.array(
            z.strictObject({
              role: z.string(),
              content: z.string().nullable(),
              channel: z.string(),
              agent_id: z.string().optional(),
              tool_name: z.string().optional(),
              created_at: isoDate,
              cursor: z.string().meta({ description: 'Pass as `before` for the older messages' }),
            }),
          ),
          message_count: z.number().int(),
          next_before: z.string().nullable(),
          turns: z
            .array(
              z.strictObject({
                turn_id: z.string(),
                number: z.number().int(),
                status: z.string(),
                agent: z
                  .strictObject({
                    id: z.string(),
                    name: z.string(),
                    confidence: z.number(),
                    method: z.string(),
                    model: z.string(),
                  })
                  .optional(),
                cost: z
                  .strictObject({
                    credits: z.number(),
                    cost_usd: z.number(),
                    input_tokens: z.number().int(),
                    output_tokens: z.number().int(),
                    model: z.string(),
                    stopped: z.boolean().optional(),
                  })
                  .optional(),
                error: z.string().optional(),
                alternatives: z.array(z.string()).meta({
                  description: 'The turns at this place of the conversation (this one included), oldest first',
                }),
                attachments: z.array(attachment).meta({
                  description:
                    'The uploaded images the turn’s message carried (`image_file_ids`, or `image_file_id`), in order; empty when it had none or an image sent inline (`image_data`, not stored). A file deleted since is left out (its name went with it)',
                }),
                attachment: attachment.nullable().meta({
                  description:
                    'The first of `attachments`, or null (kept from when a message carried one image, `image_file_id`)',
                }),
              }),
            )
            .meta({
              description: 'The page’s turns: the agent that answered, the cost, the alternatives, the attached images',
            }),
        }),
        'The page (of the branch the conversation is on)',
      ),
    },
    errors: { 404: 'No such session of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/sessions',
    summary: 'The caller’s sessions, most recently active first',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          sessions: z.array(
            z.strictObject({
              session_id: z.string(),
              title: z.string().nullable(),
              channels: z.array(z.string()),
              message_count: z.number().int(),
              last_activity: isoDate,
              created_at: isoDate,
            }),
          ),
        }),
        'The sessions',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/search/messages',
    summary: 'Full-text search across the caller’s messages',
    tags,
    access: 'caller',
    request: { query: searchQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          query: z.string(),
          results: z.array(
            z.strictObject({
              session_id: z.string(),
              role: z.string(),
              channel: z.string(),
              snippet: z.string().meta({ description: 'Matches wrapped in « and »' }),
              created_at: isoDate,
              rank: z.number(),
            }),
          ),
          total: z.number().int(),
        }),
        'The matches, best first',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/usage/:session_id',
    summary: 'A session’s tokens, credits and cost',
    tags,
    access: 'caller',
    request: { params: sessionParams },
    responses: {
      200: json(
        z.strictObject({
          session_id: z.string(),
          turns: z.number().int(),
          input_tokens: z.number().int(),
          output_tokens: z.number().int(),
          credits: z.number(),
          cost_usd: z.number(),
          by_model: z.array(
            z.strictObject({
              model: z.string(),
              turns: z.number().int(),
              input_tokens: z.number().int(),
              output_tokens: z.number().int(),
              credits: z.number(),
              cost_usd: z.number(),
              priced: z.boolean(),
              estimated: z.boolean(),
            }),
          ),
        }),
        'The usage',
      ),
    },
    errors: { 404: 'No such session of the caller’s' },
  }),
  route({
    method: 'PUT',
    path: '/sessions/:session_id/branch',
    summary: 'Show another branch of a session',
    description:
      'Puts the session’s conversation on the branch through `turn_id` (an alternative of a regenerated or edited turn): its newest turn below that one. History, export, share and the next message follow it.',
    tags,
    access: 'caller',
    request: { params: sessionParams, body: branchBodySchema },
    responses: {
      200: json(
        z.strictObject({
          session_id: z.string(),
          turn_id: z.string().meta({ description: 'The branch’s newest turn' }),
        }),
        'Switched',
      ),
    },
    errors: { 404: 'No such session or turn of the caller’s' },
  }),
  route({
    method: 'PATCH',
    path: '/sessions/:session_id',
    summary: 'Rename a session',
    description: 'Its own title, shown by `GET /sessions` instead of its first message; `null` clears it.',
    tags,
    access: 'caller',
    request: { params: sessionParams, body: renameSessionSchema },
    responses: {
      200: json(z.strictObject({ session_id: z.string(), title: z.string().nullable() }), 'Renamed'),
    },
    errors: { 404: 'No such session of the caller’s' },
  }),
  route({
    method: 'DELETE',
    path: '/sessions/:session_id',
    summary: 'Delete a session',
    tags,
    access: 'caller',
    request: { params: sessionParams },
    responses: {
      200: json(z.strictObject({ session_id: z.string(), deleted: z.literal(true) }), 'Deleted'),
    },
    errors: { 404: 'No such session of the caller’s', 409: 'A turn of the session is still running' },
  }),
];
