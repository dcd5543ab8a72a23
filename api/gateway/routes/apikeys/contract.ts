/** Contracts of the gateway's API keys (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { createKeySchema } from './schema.ts';

const tags = ['API keys'];

export const apiKeyContracts = [
  route({
    method: 'POST',
    path: '/api/v1/apikeys',
    summary: 'Create an API key',
    description: 'For the caller; the operator key may name a user by `email` (created when new) and its `plan`.',
    tags,
    access: 'caller',
    request: { body: createKeySchema },
    responses: {
      201: json(
        z.strictObject({
          id: z.string(),
          name: z.string().nullable(),
          key: z.string().meta({ description: 'The secret, shown this once' }),
          created_at: isoDate,
          user_id: z.string(),
        }),
        'The key',
      ),
    },
    errors: { 403: '`email` or `plan` from a key that is not the operator’s' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/apikeys',
    summary: 'The caller’s keys',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          keys: z.array(
            z.strictObject({
              id: z.string(),
              name: z.string().nullable(),
              key_preview: z.string(),
              created_at: isoDate,
              last_used_at: isoDate.nullable(),
            }),
          ),
        }),
        'The keys',
      ),
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/apikeys/:id',
    summary: 'Revoke a key',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ deleted: z.literal(true), id: z.string() }), 'Revoked') },
    errors: { 404: 'No such key of the caller’s' },
  }),
];
