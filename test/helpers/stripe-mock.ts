/**
 * Billing tests: a stripe-mock per test file (scripts/lib/stripe-mock.ts builds it once with `go install`), the
 * gateway settings that point at it, and Stripe webhook events built and signed like Stripe's.
 *
 * stripe-mock answers every call with fixture data and keeps no state, so API-facing endpoints (checkout,
 * portal, coupon) are tested against it for their shape, and webhook behaviour with events built here.
 */
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { startStripeMock, type RunningStripeMock } from '../../scripts/lib/stripe-mock.ts';

export const testWebhookSecret = 'whsec_tessera_test_secret';
export const testPrices = { starter: 'price_tessera_starter', pro: 'price_tessera_pro' } as const;

export function startTestStripeMock(): Promise<RunningStripeMock> {
  return startStripeMock({ log: (line) => process.stderr.write(`[stripe-mock] ${line}\n`) });
}

/** Gateway environment for billing against stripe-mock at `url`. */
export function stripeSettings(url: string): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: 'sk_test_tessera',
    STRIPE_WEBHOOK_SECRET: testWebhookSecret,
    STRIPE_API_BASE: url,
    STRIPE_PRICE_STARTER: testPrices.starter,
    STRIPE_PRICE_PRO: testPrices.pro,
  };
}

export const stripeId = (prefix: string) => `${prefix}_test_${randomBytes(8).toString('hex')}`;

/** A Stripe event envelope around `object`. */
export function stripeEvent(type: string, object: Record<string, unknown>, created: number) {
  return {
    id: stripeId('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    data: { object },
  };
}

/** The body and headers of a delivery, signed with `secret` (the test secret unless given). */
export function signedDelivery(
  event: object,
  secret = testWebhookSecret,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret });
  return { body, headers: { 'content-type': 'application/json', 'stripe-signature': signature } };
}

export interface Subscriber {
  userId: string;
  customer: string;
  subscription: string;
}

export function checkoutCompleted(who: Subscriber, plan: 'starter' | 'pro', created: number) {
  return stripeEvent(
    'checkout.session.completed',
    {
      id: stripeId('cs'),
      object: 'checkout.session',
      mode: 'subscription',
      status: 'complete',
      payment_status: 'paid',
      client_reference_id: who.userId,
      customer: who.customer,
      subscription: who.subscription,
      metadata: { user_id: who.userId, plan },
    },
    created,
  );
}

export function subscriptionEvent(
  type: 'customer.subscription.created' | 'customer.subscription.updated' | 'customer.subscription.deleted',
  who: Subscriber,
  state: { status: string; price: string },
  created: number,
) {
  return stripeEvent(
    type,
    {
      id: who.subscription,
      object: 'subscription',
      customer: who.customer,
      status: state.status,
      metadata: { user_id: who.userId },
      items: {
        object: 'list',
        data: [{ id: stripeId('si'), object: 'subscription_item', price: { id: state.price, object: 'price' } }],
      },
    },
    created,
  );
}

/** A paid renewal invoice of the subscription for the period starting at `periodStart`. */
export function renewalInvoice(
  type: 'invoice.paid' | 'invoice.payment_succeeded',
  who: Subscriber,
  price: string,
  periodStart: number,
  created: number,
) {
  const periodEnd = periodStart + 30 * 86_400;
  return stripeEvent(
    type,
    {
      id: stripeId('in'),
      object: 'invoice',
      billing_reason: 'subscription_cycle',
      customer: who.customer,
      status: 'paid',
      // An invoice's own period is the one that ended; its line carries the new one.
      period_start: periodStart - 30 * 86_400,
      period_end: periodStart,
      parent: {
        type: 'subscription_details',
        subscription_details: { subscription: who.subscription, metadata: { user_id: who.userId } },
      },
      lines: {
        object: 'list',
        data: [
          {
            id: stripeId('il'),
            object: 'line_item',
            period: { start: periodStart, end: periodEnd },
            parent: { type: 'subscription_item_details' },
            pricing: { type: 'price_details', price_details: { price } },
          },
        ],
      },
    },
    created,
  );
}
