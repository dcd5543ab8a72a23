/** Contracts of `POST /v1/chat/completions` and the request traces (api/openapi/contract.ts). */
import { z } from 'zod';
import {
  chatCompletionChunkSchema,
  chatCompletionRequestSchema,
  chatCompletionSchema,
  usageSchema,
} from '../../../../common/chat.ts';
import { errorEnvelope, eventStream, isoDate, json, route } from '../../../openapi/contract.ts';

/** Each event of a streamed completion: a chunk, an in-band error, then `[DONE]`; `id` is its stream position. */
export const completionStreamEvent = z
  .object({
    id: z.string().optional().meta({ description: 'The event’s position, for Last-Event-ID' }),
    data: z.union([chatCompletionChunkSchema, errorEnvelope, z.literal('[DONE]')]),
  })
  .meta({ id: 'CompletionStreamEvent', description: 'A server-sent event: its `id:` and its `data:` JSON' });

const streamHeaders = z.object({
  'last-event-id': z.string().optional().meta({ description: 'Resume after this event' }),
});

const attempts = z.array(z.unknown()).meta({ description: 'Each provider attempt, in order' });
const traceBase = {
  id: z.string(),
  workflow_id: z.string(),
  run_id: z.string(),
  user_id: z.string().nullable().optional(),
  requested_model: z.string().nullable(),
  started_at: isoDate,
  closed_at: isoDate.nullable(),
  attempts,
};

/** A completion's trace (`GET /api/v1/requests/{id}`; the operator console shows it too). */
export const completionTraceSchema = z.union([
  z.strictObject({ ...traceBase, status: z.literal('running') }),
  z.strictObject({
    ...traceBase,
    status: z.literal('completed'),
    model: z.string(),
    provider: z.string(),
    usage: usageSchema,
    usage_estimated: z.boolean(),
  }),
  z.strictObject({ ...traceBase, status: z.literal('failed'), error: errorEnvelope.shape.error }),
]);

export const completionContracts = [
  route({
    method: 'POST',
    path: '/v1/chat/completions',
    summary: 'Chat completion (OpenAI-compatible)',
    description:
      'Routed to the model’s providers with failover. `stream: true` answers server-sent events (chunks, then `[DONE]`), resumable at `GET /api/v1/requests/{id}/stream`. `Idempotency-Key` makes a retry return the same completion.',
    tags: ['Completions'],
    access: 'caller',
    request: {
      body: chatCompletionRequestSchema,
      headers: z.object({
        'idempotency-key': z.string().max(255).optional(),
        'x-tessera-capacity-wait': z
          .string()
          .regex(/^\d{1,2}$/)
          .optional()
          .meta({
            description:
              'Seconds (0 to 60) the request may wait for capacity while every provider of its model is saturated, instead of failing at once (docs/capacity-queue.md)',
          }),
      }),
    },
    responses: {
      200: {
        description: 'The completion, or its stream (`stream: true`); `X-Request-Id` names it',
        content: {
          'application/json': { schema: chatCompletionSchema },
          'text/event-stream': { schema: completionStreamEvent },
        },
      },
    },
    errors: {
      402: 'Not enough credits',
      403: 'The model is outside the caller’s plan (`required_plan`)',
      404: 'No such model',
      409: 'The Idempotency-Key was used with another request',
      502: 'Every provider failed',
      503: 'No provider available (breakers open)',
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/requests/:id/stream',
    summary: 'Resume a streamed completion',
    description: 'Re-reads the completion’s stream from its journal, after `Last-Event-ID` (or `after`) when given.',
    tags: ['Completions'],
    access: 'caller',
    request: {
      query: z.object({
        after: z.string().optional(),
        include_usage: z.enum(['true', 'false']).optional(),
      }),
      headers: streamHeaders,
    },
    responses: { 200: eventStream(completionStreamEvent, 'The stream') },
    errors: {
      404: 'No such request of the caller’s',
      402: 'The completion failed so',
      502: 'The completion failed so',
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/requests/:id',
    summary: 'A completion’s trace: attempts, provider, usage',
    tags: ['Completions'],
    access: 'caller',
    responses: { 200: json(completionTraceSchema, 'The trace') },
    errors: { 404: 'No such request of the caller’s' },
  }),
];
