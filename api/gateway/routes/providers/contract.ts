/** Contracts of `/health`, `/health/live` (api/readiness.ts) and `/api/v1/providers` (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { healthContracts } from '../../../readiness.ts';

export const providerContracts = [
  ...healthContracts('gateway'),
  route({
    method: 'GET',
    path: '/api/v1/providers',
    summary: 'Providers, their models and circuit breakers',
    tags: ['Models'],
    access: 'public',
    responses: {
      200: json(
        z.strictObject({
          providers: z.array(
            z.strictObject({
              id: z.string(),
              name: z.string(),
              models: z.array(z.string()),
              enabled: z.boolean(),
              protocol: z.string(),
              circuit: z.strictObject({
                state: z.enum(['closed', 'open', 'half_open']),
                consecutive_failures: z.number().int(),
                opened_at: isoDate.nullable(),
                last_error: z.string().nullable(),
              }),
            }),
          ),
          load_balanced: z.boolean(),
          total_providers: z.number().int(),
        }),
        'Every provider of the catalogue with its live breaker state',
      ),
    },
  }),
];
