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
    description:
      'For the caller; the operator key may name a user by `email` (created when new, on `plan`: an account found keeps its own plan) and give a `reason`. A key the operator key creates (with its account when new) is recorded in the operator console’s audit log as the master key’s (`key.create`: the key’s id, name and preview, never its secret; whether the account was created, and its plan), with `reason` when given, in the same transaction: a refused request records nothing.',
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
    errors: { 403: '`email`, `plan` or `reason` from a key that is not the operator’s' },
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
