/** Contracts of the agent service's billing (api/openapi/contract.ts). */
import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';
import { json, route } from '../../../openapi/contract.ts';
import { checkoutAnswer, stripeWebhookContract } from '../../../gateway/routes/billing/contract.ts';
import { checkoutBodySchema } from '../../../services/billing/schema.ts';

const tags = ['Billing'];
const rateLimits = z.strictObject({ per_hour: z.number().int().nullable(), per_day: z.number().int().nullable() });

export const agentBillingContracts = [
  route({
    method: 'GET',
    path: '/billing/plans',
    summary: 'The plans and their prices',
    tags,
    access: 'public',
    responses: {
      200: json(
        z.strictObject({
          plans: z.array(
            z.strictObject({
              id: z.enum(planNames),
              price_usd_month: z.number(),
              monthly_credits: z.number().int(),
              models: z.union([z.literal('all'), z.array(z.string())]),
              rate_limits: rateLimits,
              purchasable: z.boolean(),
            }),
          ),
        }),
        'The plans',
      ),
    },
  }),
  route({
    method: 'POST',
    path: '/billing/create-checkout',
    summary: 'Start a Stripe Checkout for a plan',
    tags,
    access: 'caller',
    request: { body: checkoutBodySchema },
    responses: { 200: json(checkoutAnswer, 'Where to pay') },
    errors: { 502: 'Stripe failed', 503: 'Billing is not configured (Stripe settings)' },
  }),
  stripeWebhookContract('/billing/webhook'),
];
