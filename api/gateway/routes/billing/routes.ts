/**
 * Billing (spec 4.6):
 * - `POST /api/v1/billing/checkout` `{plan: 'starter'|'pro'}` → `{checkout_url, session_id}` (keyed).
 * - `GET /api/v1/billing/portal` → `{portal_url}` (keyed; 404 until the account has a Stripe customer).
 * - `POST /api/v1/coupon/validate` `{code}` → `{valid, code, …}` (keyed; see CouponAnswer in schema.ts).
 * - `POST /api/v1/billing/webhook`: Stripe's events; no API key, the Stripe signature authenticates it. It is
 *   mounted before the JSON body parser and reads the raw bytes itself, since the signature covers them exactly.
 * The operator key has no account, so it cannot buy a plan (400). Without Stripe settings: 503.
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { readRawBody } from '../../../raw-body.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { checkoutBodySchema, couponBodySchema } from '../../../services/billing/schema.ts';
import type { BillingService } from '../../../services/billing/service.ts';

/** Stripe event payloads are well under this. */
const webhookBodyLimit = 1024 * 1024;

export function billingRoutes(billing: BillingService) {
  const router = new Router<AuthState>();

  const customer = (principal: AuthState['principal']) => {
    if (principal.operator)
      throw new ApiError('invalid_request', 'The operator has no account to bill: use a user key');
    return principal.userId;
  };

  router.post('/api/v1/billing/checkout', async (context) => {
    const userId = customer(context.state.principal);
    const parsed = checkoutBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await billing.checkout(userId, parsed.data.plan);
  });

  router.get('/api/v1/billing/portal', async (context) => {
    context.body = await billing.portal(customer(context.state.principal));
  });

  router.post('/api/v1/coupon/validate', async (context) => {
    const parsed = couponBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await billing.validateCoupon(parsed.data.code);
  });

  return router;
}

/** The unauthenticated webhook; mount it before the body parser. */
export function billingWebhookRoutes(billing: BillingService) {
  const router = new Router();
  router.post('/api/v1/billing/webhook', async (context) => {
    const rawBody = await readRawBody(context.req, webhookBodyLimit);
    context.body = await billing.webhook(rawBody, context.get('stripe-signature') || undefined);
  });
  return router;
}
