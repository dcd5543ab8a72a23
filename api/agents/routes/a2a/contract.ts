/** Contracts of the A2A endpoints (api/openapi/contract.ts). */
import { z } from 'zod';
import { eventStream, json, route } from '../../../openapi/contract.ts';
import { aliasBodySchema, aliasResponseSchema } from './schema.ts';

const tags = ['Agent-to-agent (A2A)'];

/** A JSON-RPC 2.0 response: the SDK's result for the method, or a JSON-RPC error (always HTTP 200). */
const jsonRpcResponse = z
  .union([
    z.looseObject({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number(), z.null()]), result: z.unknown() }),
    z.strictObject({
      jsonrpc: z.literal('2.0'),
      id: z.union([z.string(), z.number(), z.null()]),
      error: z.looseObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
    }),
  ])
  .meta({ id: 'JsonRpcResponse' });

export const a2aContracts = [
  route({
    method: 'GET',
    path: '/.well-known/agent-card.json',
    summary: 'The Agent Card (A2A v1.0, readable by v0.3 clients)',
    tags,
    access: 'public',
    responses: {
      200: json(
        z.looseObject({
          name: z.string(),
          url: z.string(),
          protocolVersion: z.string(),
          preferredTransport: z.literal('JSONRPC'),
          skills: z.array(z.looseObject({ id: z.string(), name: z.string() })),
        }),
        'The card: one skill per built-in agent',
      ),
    },
  }),
  route({
    method: 'POST',
    path: '/a2a',
    summary: 'A2A JSON-RPC (v1.0 methods, or v0.3 with `A2A-Version: 0.3` or none)',
    description:
      '`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`, push configs (v1.0); `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/*` (v0.3). Streaming methods answer server-sent events, each a JSON-RPC response.',
    tags,
    access: 'caller',
    request: {
      body: z.looseObject({
        jsonrpc: z.literal('2.0'),
        id: z.union([z.string(), z.number(), z.null()]).optional(),
        method: z.string(),
        params: z.unknown().optional(),
      }),
      headers: z.object({ 'a2a-version': z.string().optional() }),
    },
    responses: {
      200: {
        ...json(jsonRpcResponse, 'The JSON-RPC response (errors too), or its event stream'),
        content: {
          'application/json': { schema: jsonRpcResponse },
          'text/event-stream': eventStream(z.object({ data: jsonRpcResponse }), '').content!['text/event-stream']!,
        },
      },
    },
  }),
  route({
    method: 'POST',
    path: '/a2a/tasks/send',
    summary: 'Send a message as a task (the spec’s v0.1-style alias)',
    tags,
    access: 'caller',
    request: { body: aliasBodySchema },
    responses: { 200: json(aliasResponseSchema, 'The task') },
    errors: { 402: 'Not enough credits', 404: 'No such task of the caller’s', 409: 'The task has ended' },
  }),
];
