/**
 * Billing tests: a stripe-mock per test file (scripts/lib/stripe-mock.ts builds it once with `go install`), the
 * gateway settings that point at it, and Stripe webhook events built and signed like Stripe's.
 *
 * stripe-mock answers every call with fixture data and keeps no state, so API-facing endpoints (checkout,
 * portal, coupon) are tested against it for their shape, and webhook behaviour with events built here.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/**
 * The last API version before 2025-03-31.basil moved an invoice's subscription under `parent` (and a subscription's
 * billing period onto its items): events of a webhook endpoint registered at an older version look like this.
 */
export const preBasilApiVersion = '2025-02-24.acacia';

/** A Stripe event envelope around `object`, in the package's pinned API version unless `apiVersion` says. */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  created: number,
  apiVersion: string = Stripe.API_VERSION,
) {
  return {
    id: stripeId('evt'),
    object: 'event',
    api_version: apiVersion,
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

/** What every API version's paid renewal invoice has: its own period is the one that ended (its line carries the new). */
function paidCycleInvoice(who: Subscriber, periodStart: number) {
  return {
    id: stripeId('in'),
    object: 'invoice',
    billing_reason: 'subscription_cycle',
    customer: who.customer,
    status: 'paid',
    period_start: periodStart - 30 * 86_400,
    period_end: periodStart,
  };
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
      ...paidCycleInvoice(who, periodStart),
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

/**
 * The same renewal invoice as a webhook endpoint registered before 2025-03-31.basil receives it: the subscription and
 * its metadata at the invoice's top level, the line marked by `type` (no `parent` anywhere).
 */
export function preBasilRenewalInvoice(
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
      ...paidCycleInvoice(who, periodStart),
      subscription: who.subscription,
      subscription_details: { metadata: { user_id: who.userId } },
      lines: {
        object: 'list',
        data: [
          {
            id: stripeId('il'),
            object: 'line_item',
            type: 'subscription',
            subscription: who.subscription,
            period: { start: periodStart, end: periodEnd },
            price: { id: price, object: 'price' },
          },
        ],
      },
    },
    created,
    preBasilApiVersion,
  );
}

/** A promotion code as Stripe holds it, and the coupon it applies. */
export interface PromotionCode {
  code: string;
  active: boolean;
  coupon: { id: string; name: string; percent_off: number; duration: 'once' | 'repeating' | 'forever'; valid: boolean };
}

/**
 * Stripe's answers to coupon validation where stripe-mock cannot give them (it keeps no state and ignores list
 * filters): `GET /v1/promotion_codes` filtered as Stripe filters (`code` in any case, `active`), `GET /v1/coupons/:id`
 * for the coupons of `promotions` (another id is Stripe's 404 `resource_missing`). Any other call is a 404.
 */
export async function startPromotionCodeStripe(promotions: PromotionCode[]): Promise<{
  url: string;
  requests: string[];
  close(): Promise<void>;
}> {
  const requests: string[] = [];
  const couponOf = (coupon: PromotionCode['coupon']) => ({
    object: 'coupon',
    amount_off: null,
    currency: null,
    duration_in_months: null,
    ...coupon,
  });
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://stripe.invalid');
    requests.push(`${request.method} ${url.pathname}${url.search}`);
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json', 'request-id': stripeId('req') });
      response.end(JSON.stringify(body));
    };
    if (request.method === 'GET' && url.pathname === '/v1/promotion_codes') {
      const code = url.searchParams.get('code');
      const active = url.searchParams.get('active');
      const data = promotions
        .filter((promotion) => code === null || promotion.code.toLowerCase() === code.toLowerCase())
        .filter((promotion) => active === null || String(promotion.active) === active)
        .map((promotion, index) => ({
          id: `promo_${index}`,
          object: 'promotion_code',
          code: promotion.code,
          active: promotion.active,
          promotion: { type: 'coupon', coupon: promotion.coupon.id },
        }));
      send(200, { object: 'list', url: '/v1/promotion_codes', has_more: false, data });
      return;
    }
    const coupon = /^\/v1\/coupons\/([^/]+)$/.exec(url.pathname);
    const found = coupon && promotions.find((promotion) => promotion.coupon.id === decodeURIComponent(coupon[1]!));
    if (request.method === 'GET' && found) {
      send(200, couponOf(found.coupon));
      return;
    }
    send(404, {
      error: {
        type: 'invalid_request_error',
        code: 'resource_missing',
        message: `No such resource: '${url.pathname}'`,
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
