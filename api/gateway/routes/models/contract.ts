/** Contracts of the model list, pricing and plans (api/openapi/contract.ts). */
import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';
import { json, route } from '../../../openapi/contract.ts';

const chatModel = z.strictObject({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});

const embeddingModel = z.strictObject({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
  type: z.literal('embedding'),
  dimensions: z.number().int(),
  shortenable: z.boolean(),
  max_input_tokens: z.number().int(),
});

const model = z.union([chatModel, embeddingModel]).meta({ id: 'Model' });

const rateLimits = z.strictObject({ per_hour: z.number().int().nullable(), per_day: z.number().int().nullable() });

const tags = ['Models'];

export const modelContracts = [
  route({
    method: 'GET',
    path: '/v1/models',
    summary: 'The models (OpenAI-compatible list)',
    description:
      'The chat models by plain id; `include=versions` adds every dated pin; `type=embedding` lists the embedding models instead.',
    tags,
    access: 'public',
    request: {
      query: z.object({
        include: z.literal('versions').optional(),
        type: z.literal('embedding').optional(),
      }),
    },
    responses: { 200: json(z.strictObject({ object: z.literal('list'), data: z.array(model) }), 'The models') },
  }),
  route({
    method: 'GET',
    path: '/v1/models/pricing',
    summary: 'List prices per million tokens',
    tags,
    access: 'public',
    responses: {
      200: json(
        z.strictObject({
          object: z.literal('pricing'),
          currency: z.literal('USD'),
          unit: z.literal('per_1m_tokens'),
          models: z.record(z.string(), z.strictObject({ input_per_1m: z.number(), output_per_1m: z.number() })),
          embedding_models: z.record(z.string(), z.strictObject({ input_per_1m: z.number() })),
        }),
        'Prices of the chat and embedding models',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/plans',
    summary: 'Plans, their credits and limits, and each model’s credit rate',
    tags: ['Account'],
    access: 'public',
    responses: {
      200: json(
        z.strictObject({
          plans: z.record(
            z.enum(planNames),
            z.strictObject({
              price_usd_month: z.number(),
              monthly_credits: z.number().int(),
              models: z.union([z.literal('all'), z.array(z.string())]),
              rate_limits: rateLimits,
            }),
          ),
          guest_rate_limits: rateLimits,
          credit_rates: z.record(z.string(), z.number()).meta({ description: 'Credits per 1,000 tokens, by model' }),
        }),
        'The plans',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/v1/models/:id',
    summary: 'One model, by plain id or dated pin',
    tags,
    access: 'public',
    responses: { 200: json(model, 'The model') },
    errors: { 404: 'No such model (`model_not_found`)' },
  }),
];
