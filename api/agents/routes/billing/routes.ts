/**
 * Billing of the agent service (spec 4.3 issue item 12), on the gateway's one Stripe integration (BillingService):
 * the same customers, the same ledger, the same webhook rules (signature, once per event id, any order).
 * - `GET /billing/plans` (public: prices are no secret, and a page shows them before anyone logs in) →
 *   `{plans: [{id, price_usd_month, monthly_credits, models, rate_limits, purchasable}]}`.
 * - `POST /billing/create-checkout {plan: 'starter'|'pro'}` (login required) → `{checkout_url, session_id}`.
 * - `POST /billing/webhook`: Stripe's events, authenticated by the Stripe signature over the raw body, so it is
 *   mounted before the body parser (`billingWebhookRoutes`). Stripe may be pointed at either service's webhook.
 */
import Router from '@koa/router';
import { planNames, type PlansFile } from '../../../../common/plans.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { readRawBody } from '../../../raw-body.ts';
import { checkoutBodySchema, purchasablePlans } from '../../../services/billing/schema.ts';
import type { BillingService } from '../../../services/billing/service.ts';

/** Stripe event payloads are well under this. */
const webhookBodyLimit = 1024 * 1024;

export function billingRoutes(billing: BillingService, plans: PlansFile) {
  const router = new Router<CallerState>();

  router.get('/billing/plans', (context) => {
    context.body = {
      plans: planNames.map((id) => ({
        id,
        ...plans.plans[id],
        purchasable: (purchasablePlans as readonly string[]).includes(id),
      })),
    };
  });

  router.post('/billing/create-checkout', async (context) => {
    const principal = requireCaller(context.state);
    if (principal.operator) {
      throw new ApiError('invalid_request', 'The operator has no account to bill: log in, or use a user’s key');
    }
    const parsed = checkoutBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await billing.checkout(principal.userId, parsed.data.plan);
  });

  return router;
}

/** The unauthenticated, Stripe-signed webhook; mount it before the body parser. */
export function billingWebhookRoutes(billing: BillingService) {
  const router = new Router();
  router.post('/billing/webhook', async (context) => {
    const rawBody = await readRawBody(context.req, webhookBodyLimit);
    context.body = await billing.webhook(rawBody, context.get('stripe-signature') || undefined);
  });
  return router;
}
