/** Contracts of sharing and export (api/openapi/contract.ts). */
import { z } from 'zod';
import { bytes, json, route } from '../../../openapi/contract.ts';
import {
  exportedConversationSchema,
  exportQuerySchema,
  revokeResponseSchema,
  sessionIdSchema,
  shareBodySchema,
  sharedConversationSchema,
  shareResponseSchema,
} from './schema.ts';

const tags = ['Sharing and export'];
const sessionParams = z.object({ session_id: sessionIdSchema });
const noSession = { 404: 'No such session of the caller’s' } as const;

export const sharingContracts = [
  route({
    method: 'POST',
    path: '/share/:session_id',
    summary: 'Make a read-only public link to a conversation',
    description: 'The token is shown this once. Each call makes another link.',
    tags,
    access: 'caller',
    request: { params: sessionParams, body: shareBodySchema },
    responses: { 201: json(shareResponseSchema.strict(), 'The link') },
    errors: noSession,
  }),
  route({
    method: 'DELETE',
    path: '/share/:session_id',
    summary: 'Revoke every live link of a conversation',
    tags,
    access: 'caller',
    request: { params: sessionParams },
    responses: { 200: json(revokeResponseSchema.strict(), 'How many links were revoked') },
    errors: noSession,
  }),
  route({
    method: 'GET',
    path: '/s/:token',
    summary: 'A shared conversation (HTML, or JSON with Accept: application/json)',
    description: 'Never indexed, never cached, a strict CSP. A revoked, expired or unknown link is the same 404.',
    tags,
    access: 'public',
    responses: {
      200: {
        description: 'The conversation’s messages, nothing else',
        content: {
          'text/html': {},
          'application/json': { schema: sharedConversationSchema.strict() },
        },
      },
    },
    errors: { 404: 'No such live link' },
  }),
  route({
    method: 'GET',
    path: '/export/:session_id',
    summary: 'Export a conversation as Markdown or JSON',
    tags,
    access: 'caller',
    request: { params: sessionParams, query: exportQuerySchema },
    responses: {
      200: {
        ...bytes(
          ['text/markdown'],
          'The conversation as an attachment (`conversation-<session>.md|json`)',
          z.object({ 'content-disposition': z.string() }),
        ),
        content: {
          'text/markdown': {},
          'application/json': { schema: exportedConversationSchema.strict() },
        },
      },
    },
    errors: noSession,
  }),
];
