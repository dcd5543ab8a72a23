/** Contracts of the Responses door, OpenAI's Responses API (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, listPage, route } from '../../../openapi/contract.ts';
import {
  inputItemsQuerySchema,
  outputItemSchema,
  responseObjectSchema,
  responseRequestSchema,
  responseStreamEventSchema,
  retrieveQuerySchema,
} from '../../../../common/doors/responses/schema.ts';

const inputItemListSchema = listPage(outputItemSchema, 'ResponseInputItemList');

const stream = { 'text/event-stream': { schema: responseStreamEventSchema } };

export const responseContracts = [
  route({
    method: 'POST',
    path: '/v1/responses',
    summary: 'Response (OpenAI Responses API)',
    description:
      'OpenAI’s Responses API on any catalogue model, routed and failed over as a chat completion and charged as one; the platform keeps the conversation (`previous_response_id`) unless `store: false`. `background: true` answers at once (`queued`) and runs durably; `stream: true` answers the typed events.',
    tags: ['Completions'],
    access: 'caller',
    request: { body: responseRequestSchema, headers: z.object({ 'idempotency-key': z.string().max(255).optional() }) },
    responses: {
      200: {
        description: 'The Response (`queued` in the background), or its stream of events',
        content: { 'application/json': { schema: responseObjectSchema }, ...stream },
      },
    },
    errors: {
      402: 'Not enough credits',
      403: 'The model is outside the caller’s plan',
      404: 'No such model, or no such previous response of the caller’s',
      409: 'The Idempotency-Key was used with another request',
      502: 'Every provider failed',
    },
  }),
  route({
    method: 'GET',
    path: '/v1/responses/:id',
    summary: 'A Response, or its stream read again',
    description:
      'With `stream=true` (a response created with `stream: true`), its events from the stream journal, numbered as at first, after `starting_after`.',
    tags: ['Completions'],
    access: 'caller',
    request: { query: retrieveQuerySchema },
    responses: {
      200: {
        description: 'The Response, or its events',
        content: { 'application/json': { schema: responseObjectSchema }, ...stream },
      },
    },
    errors: { 404: 'No such response of the caller’s' },
  }),
  route({
    method: 'DELETE',
    path: '/v1/responses/:id',
    summary: 'Delete a stored Response',
    tags: ['Completions'],
    access: 'caller',
    responses: {
      200: json(z.strictObject({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) }), 'Deleted'),
    },
    errors: { 404: 'No such response of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/v1/responses/:id/input_items',
    summary: 'A Response’s input items',
    tags: ['Completions'],
    access: 'caller',
    request: { query: inputItemsQuerySchema },
    responses: { 200: json(inputItemListSchema, 'The items, newest first unless `order=asc`') },
    errors: { 404: 'No such response of the caller’s' },
  }),
  route({
    method: 'POST',
    path: '/v1/responses/:id/cancel',
    summary: 'Cancel a background Response',
    description: 'Stops it where it is; what it generated until then is kept and charged.',
    tags: ['Completions'],
    access: 'caller',
    responses: { 200: json(responseObjectSchema, 'The Response, `cancelled` unless it had ended') },
    errors: { 404: 'No such response of the caller’s' },
  }),
];
