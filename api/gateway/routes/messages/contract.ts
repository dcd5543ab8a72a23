/** Contracts of the Messages door, Anthropic's Messages API (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, namedEvents, route } from '../../../openapi/contract.ts';
import {
  anthropicErrorSchema,
  anthropicMessageSchema,
  countTokensRequestSchema,
  messageStreamEvents,
  messagesRequestSchema,
} from '../../../../common/doors/messages/schema.ts';

const anthropicErrors = { schema: anthropicErrorSchema, statuses: { 503: 529 } };

const anthropicHeaders = z.object({
  'x-api-key': z.string().optional().meta({ description: 'A Tessera key (or send Authorization: Bearer)' }),
  'anthropic-version': z.string().optional().meta({ description: 'Accepted; any version' }),
  'anthropic-beta': z.string().optional().meta({ description: 'Accepted and ignored' }),
});

export const messageContracts = [
  route({
    method: 'POST',
    path: '/v1/messages',
    summary: 'Message (Anthropic Messages API)',
    description:
      'Anthropic’s Messages API on any catalogue model, routed and failed over as a chat completion and charged as one. `stream: true` answers Anthropic’s named events. Errors in Anthropic’s envelope; `request-id` names the request (GET /api/v1/requests/{id}).',
    tags: ['Completions'],
    access: 'caller',
    request: {
      body: messagesRequestSchema,
      headers: anthropicHeaders.extend({ 'idempotency-key': z.string().max(255).optional() }),
    },
    responses: {
      200: {
        description: 'The Message, or its stream of events (`stream: true`)',
        content: {
          'application/json': { schema: anthropicMessageSchema },
          'text/event-stream': { schema: namedEvents('AnthropicMessageStreamEvent', messageStreamEvents) },
        },
      },
    },
    errorEnvelope: anthropicErrors,
    errors: {
      402: '`billing_error`: not enough credits',
      403: '`permission_error`: the model is outside the caller’s plan',
      404: '`not_found_error`: no such model',
      409: '`invalid_request_error`: the Idempotency-Key was used with another request',
      502: '`api_error`: every provider failed',
      529: '`overloaded_error`: a part of the platform is down (Retry-After)',
    },
  }),
  route({
    method: 'POST',
    path: '/v1/messages/count_tokens',
    summary: 'Count a Message’s input tokens (Anthropic Messages API)',
    description: 'The prompt’s tokens as the platform counts them to hold credits and to bill an unreported usage.',
    tags: ['Completions'],
    access: 'caller',
    request: { body: countTokensRequestSchema, headers: anthropicHeaders },
    responses: {
      200: json(z.strictObject({ input_tokens: z.number().int() }).meta({ id: 'AnthropicTokenCount' }), 'The count'),
    },
    errorEnvelope: anthropicErrors,
    errors: { 404: '`not_found_error`: no such model', 529: '`overloaded_error`: a part of the platform is down' },
  }),
];
