/** Contracts of the account, `/api/v1/auth/me` and usage (api/openapi/contract.ts). */
import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { accountUpdateSchema, usageQuerySchema } from './schema.ts';

const tags = ['Account'];
const userHeader = z.object({
  'x-user-id': z.string().optional().meta({ description: 'Operator only: the user to read' }),
});

export const accountSchema = z.strictObject({
  user_id: z.string(),
  plan: z.enum(planNames),
  credits_remaining: z.number(),
  credits_used: z.number(),
  credits_held: z.number(),
  channels: z.array(z.string()),
  allowed_models: z.array(z.string()),
});

export const accountContracts = [
  route({
    method: 'GET',
    path: '/api/v1/account/:id',
    summary: 'An account: plan, credits, channels, allowed models',
    description: 'A user reads their own account; the operator any.',
    tags,
    access: 'caller',
    responses: { 200: json(accountSchema, 'The account') },
    errors: { 403: 'Another user’s account', 404: 'No such account' },
  }),
  route({
    method: 'PATCH',
    path: '/api/v1/account/:id',
    summary: 'Change an account’s plan or custom limits',
    description:
      'A new plan starts a new cycle with its monthly credits; `custom_limits` replaces the account’s whole, null clears them. Recorded in the operator console’s audit log as the master key’s, with `reason` when given (the console’s own door, `PATCH /admin/api/users/{id}/account`, requires one).',
    tags,
    access: 'operator',
    request: { body: accountUpdateSchema },
    responses: { 200: json(accountSchema, 'The account as changed') },
    errors: { 403: 'Not the operator', 404: 'No such account' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/auth/me',
    summary: 'The key’s user',
    tags,
    access: 'caller',
    request: { headers: userHeader },
    responses: {
      200: json(
        z.strictObject({
          user_id: z.string(),
          email: z.string().nullable(),
          plan: z.enum(planNames),
          credits_remaining: z.number(),
          created_at: isoDate,
        }),
        'The user',
      ),
    },
    errors: { 403: 'X-User-Id names another user (not the operator)', 404: 'No such account' },
  }),
  route({
    method: 'GET',
    path: '/api/v1/usage',
    summary: 'Credits used and remaining',
    tags,
    access: 'caller',
    request: { query: usageQuerySchema, headers: userHeader },
    responses: {
      200: json(
        z.strictObject({
          credits_used: z.number(),
          credits_remaining: z.number(),
          from: isoDate.nullable().optional(),
          to: isoDate.nullable().optional(),
          by_model: z
            .array(
              z.strictObject({
                model: z.string().nullable(),
                requests: z.number().int(),
                credits: z.number(),
                prompt_tokens: z.number().int(),
                completion_tokens: z.number().int(),
                estimated_requests: z.number().int(),
              }),
            )
            .optional(),
        }),
        'Usage, within `[from, to)` when given, per model with `group_by=model`',
      ),
    },
    errors: { 403: 'X-User-Id names another user (not the operator)', 404: 'No such account' },
  }),
];
