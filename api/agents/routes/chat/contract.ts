/** Contracts of the agent service's chat: streams, loops, re-attaching, cancelling, approvals (api/openapi/contract.ts). */
import { z } from 'zod';
import { errorEnvelope, eventStream, json, route } from '../../../openapi/contract.ts';
import { agentStreamEvents } from './events.ts';
import { decisionBody, externalBody, loopBody, sessionKey, streamBody } from './schema.ts';

const tags = ['Chat'];

/** Each event of an agent stream: `data:` JSON with its `type` (events.ts), its `id:`, then `data: [DONE]`. */
export const agentStreamEvent = z
  .object({
    id: z.string().optional().meta({ description: 'The event’s position, for Last-Event-ID' }),
    data: z.union([
      z.discriminatedUnion('type', Object.values(agentStreamEvents) as unknown as [z.ZodObject, ...z.ZodObject[]]),
      z.literal('[DONE]'),
    ]),
  })
  .meta({ id: 'AgentStreamEvent', description: 'A server-sent event: its `id:` and its `data:` JSON' });

const stream = eventStream(agentStreamEvent, 'The turn’s events, then `[DONE]` (`X-Turn-Id` names the turn)');
/** A workspace agent for a user without the Google login. */
const googleLogin = {
  ...json(errorEnvelope, 'The agent needs the caller’s Google login: go to `Location` (`/auth/google`)'),
  headers: z.object({ location: z.string() }),
};
const turnErrors = {
  402: 'Not enough credits',
  403: 'The model or agent is outside the caller’s plan',
  404: 'No such agent, model, file (`image_file_id`, any of `image_file_ids`) or turn (`replaces_turn`) of the caller’s, or an image file of the turn to replace was deleted',
  409: 'The session has a turn running, or the turn to replace has not ended',
  502: 'The model call failed',
  503: 'No provider available',
} as const;
const sessionParams = z.object({ session_id: sessionKey });

export const agentChatContracts = [
  route({
    method: 'POST',
    path: '/chat/stream/:session_id',
    summary: 'Send a message: routed to an agent, streamed',
    tags,
    access: 'caller',
    request: { params: sessionParams, body: streamBody },
    responses: { 200: stream, 302: googleLogin },
    errors: turnErrors,
  }),
  route({
    method: 'POST',
    path: '/chat/loop/:session_id',
    summary: 'Run an agent loop, streamed with `iteration` events',
    tags,
    access: 'caller',
    request: { params: sessionParams, body: loopBody },
    responses: { 200: stream, 302: googleLogin },
    errors: turnErrors,
  }),
  route({
    method: 'POST',
    path: '/api/v1/chat',
    summary: 'Chat (external API), streamed',
    tags,
    access: 'caller',
    request: { body: externalBody },
    responses: { 200: stream, 302: googleLogin },
    errors: turnErrors,
  }),
  route({
    method: 'GET',
    path: '/chat/turns/:turn_id/stream',
    summary: 'Re-attach to a turn or loop',
    tags,
    access: 'caller',
    request: {
      query: z.object({ after: z.string().optional() }),
      headers: z.object({ 'last-event-id': z.string().optional() }),
    },
    responses: { 200: stream },
    errors: { 404: 'No such turn of the caller’s' },
  }),
  route({
    method: 'POST',
    path: '/chat/turns/:turn_id/cancel',
    summary: 'Stop a turn: a loop after its current iteration, any other turn now',
    description:
      'A turn that is not a loop stops at once: the model call it is streaming ends (its answer is what was streamed, ' +
      'kept in the history and billed at what it used), a running tool is stopped, a tool waiting for approval counts ' +
      'as rejected, and no further step is taken. Its stream ends with `cost` carrying `stop: cancelled`. A loop ' +
      'finishes its current iteration, then ends with `stop: cancelled` on its last `iteration` event.',
    tags,
    access: 'caller',
    responses: {
      202: json(z.strictObject({ turn_id: z.string(), cancelling: z.literal(true) }), 'Cancelling'),
    },
    errors: { 404: 'No such turn of the caller’s', 409: 'The turn has finished' },
  }),
  ...(['approve', 'reject'] as const).map((decision) =>
    route({
      method: 'POST',
      path: `/chat/approvals/:id/${decision}`,
      summary: `${decision === 'approve' ? 'Approve' : 'Reject'} a tool call waiting for approval`,
      tags,
      access: 'caller',
      request: { body: decisionBody },
      responses: {
        200: json(z.strictObject({ id: z.string(), approved: z.literal(decision === 'approve') }), 'Decided'),
      },
      errors: { 404: 'No such approval of the caller’s', 409: 'Already decided, or no longer waiting' },
    }),
  ),
];
