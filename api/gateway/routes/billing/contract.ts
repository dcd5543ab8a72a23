/** Contracts of billing on the gateway, and the Stripe webhook both services serve (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, route } from '../../../openapi/contract.ts';
import { checkoutBodySchema, couponBodySchema } from '../../../services/billing/schema.ts';

const tags = ['Billing'];
const notConfigured = 'Billing is not configured (Stripe settings)';

export const checkoutAnswer = z.strictObject({ checkout_url: z.string(), session_id: z.string() });

export const couponAnswer = z.union([
  z.strictObject({
    valid: z.literal(true),
    code: z.string(),
    source: z.enum(['promotion_code', 'coupon']),
    name: z.string().nullable(),
    percent_off: z.number().nullable(),
    amount_off: z.number().nullable().meta({ description: 'In the currency’s smallest unit' }),
    currency: z.string().nullable(),
    duration: z.string().meta({ description: 'once, repeating or forever' }),
    duration_in_months: z.number().nullable(),
  }),
  z.strictObject({ valid: z.literal(false), code: z.string() }),
]);

/** `POST /api/v1/billing/webhook` (gateway) and `POST /billing/webhook` (agent service): Stripe's events. */
export function stripeWebhookContract(path: string) {
  return route({
    method: 'POST',
    path,
    summary: 'Stripe’s webhook',
    description: 'Authenticated by the `Stripe-Signature` header over the raw body (STRIPE_WEBHOOK_SECRET).',
    tags,
    access: 'signed',
    request: {
      content: { 'application/json': { schema: z.looseObject({ id: z.string(), type: z.string() }) } },
      headers: z.object({ 'stripe-signature': z.string() }),
    },
    responses: {
      200: json(
        z.strictObject({
          received: z.literal(true),
          event_id: z.string(),
          type: z.string(),
          duplicate: z.literal(true).optional(),
          stale: z.literal(true).optional(),
          ignored: z.string().optional(),
          applied: z.string().optional(),
        }),
        'The event, applied once (or why not)',
      ),
    },
    errors: { 503: notConfigured },
  });
}

export const billingContracts = [
  route({
    method: 'POST',
    path: '/api/v1/billing/checkout',
    summary: 'Start a Stripe Checkout for a plan',
    tags,
    access: 'caller',
    request: { body: checkoutBodySchema },
    responses: { 200: json(checkoutAnswer, 'Where to pay') },
    errors: { 502: 'Stripe failed', 503: notConfigured },
  }),
  route({
    method: 'GET',
    path: '/api/v1/billing/portal',
    summary: 'A Stripe customer-portal session',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ portal_url: z.string() }), 'The portal') },
    errors: { 404: 'The account has no billing profile yet', 502: 'Stripe failed', 503: notConfigured },
  }),
  route({
    method: 'POST',
    path: '/api/v1/coupon/validate',
    summary: 'Whether a coupon or promotion code is redeemable',
    tags,
    access: 'caller',
    request: { body: couponBodySchema },
    responses: { 200: json(couponAnswer, 'The coupon, or `valid: false`') },
    errors: { 502: 'Stripe failed', 503: notConfigured },
  }),
  stripeWebhookContract('/api/v1/billing/webhook'),
];
