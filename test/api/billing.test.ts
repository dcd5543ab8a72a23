/**
 * Billing: checkout, portal and coupons against stripe-mock; the webhook with signed events built here
 * (signature, once per event id, any order, plan and credit effects), read back through the public API.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { startGateway } from '../../api/server.ts';
import type { RunningStripeMock } from '../../scripts/lib/stripe-mock.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import {
  checkoutCompleted,
  preBasilApiVersion,
  preBasilRenewalInvoice,
  renewalInvoice,
  signedDelivery,
  startPromotionCodeStripe,
  startTestStripeMock,
  stripeId,
  stripeSettings,
  subscriptionEvent,
  testPrices,
  type Subscriber,
} from '../helpers/stripe-mock.ts';

let stripeMock: RunningStripeMock;
let platform: TestPlatform;
let database: pg.Client;

beforeAll(async () => {
  stripeMock = await startTestStripeMock();
  platform = await startTestPlatform(stripeSettings(stripeMock.url));
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await stripeMock?.stop();
});

const monthlyCredits = { free: 100, starter: 50_000, pro: 200_000 };
/** Event times: an hour ago, then seconds later; signatures are always fresh. */
const base = Math.floor(Date.now() / 1000) - 3600;

async function freeUser(): Promise<Subscriber & { key: string }> {
  const { key, user_id } = await platform.createKey(undefined, 'free');
  return { key, userId: user_id, customer: stripeId('cus'), subscription: stripeId('sub') };
}

async function account(user: { key: string; userId: string }) {
  const response = await platform.fetch(`/api/v1/account/${user.userId}`, { key: user.key });
  expect(response.status).toBe(200);
  return (await response.json()) as { plan: string; credits_remaining: number };
}

async function deliver(event: object, secret?: string) {
  const { body, headers } = signedDelivery(event, secret);
  const response = await platform.fetch('/api/v1/billing/webhook', { method: 'POST', body, headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function storedSubscription(userId: string) {
  const { rows } = await database.query<{ stripe_customer_id: string | null; stripe_subscription_id: string | null }>(
    'select stripe_customer_id, stripe_subscription_id from users where id = $1',
    [userId],
  );
  return rows[0]!;
}

describe('checkout, portal and coupons (stripe-mock)', () => {
  it('answers a Checkout URL, then a portal URL for the customer it created', async () => {
    const user = await freeUser();
    const portalBefore = await platform.fetch('/api/v1/billing/portal', { key: user.key });
    expect(portalBefore.status).toBe(404);

    const response = await platform.fetch('/api/v1/billing/checkout', {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({ plan: 'pro' }),
    });
    expect(response.status).toBe(200);
    const checkout = (await response.json()) as { checkout_url: string; session_id: string };
    expect(checkout.checkout_url).toMatch(/^https:\/\/checkout\.stripe\.com\//);
    expect(checkout.session_id).toMatch(/^cs_/);
    expect((await storedSubscription(user.userId)).stripe_customer_id).toMatch(/^cus_/);
    // Checkout alone changes no plan: the webhook does.
    expect((await account(user)).plan).toBe('free');

    const portal = await platform.fetch('/api/v1/billing/portal', { key: user.key });
    expect(portal.status).toBe(200);
    expect(((await portal.json()) as { portal_url: string }).portal_url).toMatch(/^https:\/\//);
  });

  it('refuses unknown plans, the operator key and requests without a key', async () => {
    const user = await freeUser();
    for (const plan of ['business', 'free', 'gold', undefined]) {
      const response = await platform.fetch('/api/v1/billing/checkout', {
        method: 'POST',
        key: user.key,
        body: JSON.stringify({ plan }),
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe('invalid_request');
    }
    const operator = await platform.fetch('/api/v1/billing/checkout', {
      method: 'POST',
      key: platform.masterKey,
      body: JSON.stringify({ plan: 'pro' }),
    });
    expect(operator.status).toBe(400);
    const anonymous = await platform.fetch('/api/v1/billing/checkout', {
      method: 'POST',
      body: JSON.stringify({ plan: 'pro' }),
    });
    expect(anonymous.status).toBe(401);
  });

  it('describes a valid coupon code', async () => {
    const user = await freeUser();
    const response = await platform.fetch('/api/v1/coupon/validate', {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({ code: 'SPRING25' }),
    });
    expect(response.status).toBe(200);
    // stripe-mock's promotion code fixture is inactive, so the code is found as a coupon (its fixture is valid).
    expect(await response.json()).toEqual({
      valid: true,
      code: 'SPRING25',
      source: 'coupon',
      name: expect.any(String),
      percent_off: expect.any(Number),
      amount_off: null,
      currency: expect.any(String),
      duration: expect.stringMatching(/^(once|repeating|forever)$/),
      duration_in_months: expect.any(Number),
    });
    const empty = await platform.fetch('/api/v1/coupon/validate', {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({ code: '  ' }),
    });
    expect(empty.status).toBe(400);
  });

  it('finds an active promotion code typed in any case, as Stripe’s Checkout does', async () => {
    // stripe-mock ignores the list's filters; this answers as Stripe does (its `code` filter is case-insensitive).
    const stripe = await startPromotionCodeStripe([
      {
        code: 'WELCOME5',
        active: true,
        coupon: { id: 'coupon_welcome', name: 'Welcome', percent_off: 5, duration: 'once', valid: true },
      },
      {
        code: 'EXPIRED10',
        active: false,
        coupon: { id: 'coupon_expired', name: 'Old', percent_off: 10, duration: 'once', valid: true },
      },
    ]);
    const replica = await startGateway({ ...platform.environment, STRIPE_API_BASE: stripe.url });
    try {
      const user = await freeUser();
      const validate = async (code: string) => {
        const response = await fetch(`${replica.url}/api/v1/coupon/validate`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ code }),
        });
        expect(response.status).toBe(200);
        return (await response.json()) as Record<string, unknown>;
      };
      for (const typed of ['welcome5', 'WELCOME5', 'Welcome5', ' wElCoMe5 ']) {
        expect({ typed, answer: await validate(typed) }).toEqual({
          typed,
          answer: {
            valid: true,
            code: 'WELCOME5',
            source: 'promotion_code',
            name: 'Welcome',
            percent_off: 5,
            amount_off: null,
            currency: null,
            duration: 'once',
            duration_in_months: null,
          },
        });
      }
      // Inactive or unknown codes stay invalid, in any case; a coupon id is an id, matched exactly.
      expect(await validate('expired10')).toEqual({ valid: false, code: 'expired10' });
      expect(await validate('welcome6')).toEqual({ valid: false, code: 'welcome6' });
      expect(await validate('coupon_welcome')).toMatchObject({ valid: true, source: 'coupon' });
      expect(await validate('COUPON_WELCOME')).toEqual({ valid: false, code: 'COUPON_WELCOME' });
      expect(stripe.requests).toContain('GET /v1/promotion_codes?code=welcome5&active=true&limit=1');
    } finally {
      await replica.close();
      await stripe.close();
    }
  });

  it('answers 503 on a replica without Stripe settings', async () => {
    const replica = await startGateway({
      ...platform.environment,
      STRIPE_SECRET_KEY: '',
      STRIPE_WEBHOOK_SECRET: '',
      STRIPE_API_BASE: '',
    });
    try {
      const user = await freeUser();
      const checkout = await fetch(`${replica.url}/api/v1/billing/checkout`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ plan: 'pro' }),
      });
      expect(checkout.status).toBe(503);
      expect(await checkout.json()).toEqual({
        error: { type: 'service_unavailable', message: 'billing is not configured' },
      });
      const { body, headers } = signedDelivery(checkoutCompleted(user, 'pro', base));
      const webhook = await fetch(`${replica.url}/api/v1/billing/webhook`, { method: 'POST', body, headers });
      expect(webhook.status).toBe(503);
      expect((await account(user)).plan).toBe('free');
    } finally {
      await replica.close();
    }
  });
});

describe('webhook', () => {
  it('rejects a bad or missing signature and changes nothing', async () => {
    const user = await freeUser();
    const before = await account(user);
    const event = checkoutCompleted(user, 'pro', base);

    const wrongSecret = await deliver(event, 'whsec_not_the_secret');
    expect(wrongSecret.status).toBe(400);
    expect(wrongSecret.body).toMatchObject({ error: { type: 'invalid_request' } });

    // A valid signature over another payload: the body was tampered with.
    const { headers } = signedDelivery(checkoutCompleted(user, 'starter', base));
    const tampered = await platform.fetch('/api/v1/billing/webhook', {
      method: 'POST',
      body: JSON.stringify(event),
      headers,
    });
    expect(tampered.status).toBe(400);

    const unsigned = await platform.fetch('/api/v1/billing/webhook', {
      method: 'POST',
      body: JSON.stringify(event),
      headers: { 'content-type': 'application/json' },
    });
    expect(unsigned.status).toBe(400);

    expect(await account(user)).toEqual(before);
    expect(await storedSubscription(user.userId)).toEqual({ stripe_customer_id: null, stripe_subscription_id: null });
    const { rowCount } = await database.query('select 1 from stripe_events where id = $1', [event.id]);
    expect(rowCount).toBe(0);

    // The same event, properly signed, is then accepted: nothing about it was recorded by the rejections.
    expect((await deliver(event)).status).toBe(200);
    expect((await account(user)).plan).toBe('pro');
  });

  it('moves a free user to pro on checkout completion and grants the credits once, however often delivered', async () => {
    const user = await freeUser();
    const before = await account(user);
    expect(before.plan).toBe('free');
    const event = checkoutCompleted(user, 'pro', base);

    const first = await deliver(event);
    expect(first).toEqual({
      status: 200,
      body: expect.objectContaining({ received: true, event_id: event.id, applied: 'plan pro, new cycle' }),
    });
    const after = await account(user);
    expect(after.plan).toBe('pro');
    expect(after.credits_remaining).toBe(before.credits_remaining + monthlyCredits.pro);
    expect(await storedSubscription(user.userId)).toEqual({
      stripe_customer_id: user.customer,
      stripe_subscription_id: user.subscription,
    });

    const again = await Promise.all([deliver(event), deliver(event)]);
    for (const duplicate of again) {
      expect(duplicate).toEqual({ status: 200, body: expect.objectContaining({ received: true, duplicate: true }) });
    }
    expect(await account(user)).toEqual(after);

    // The subscription's own created/updated events for the same plan grant nothing more.
    const created = await deliver(
      subscriptionEvent('customer.subscription.created', user, { status: 'active', price: testPrices.pro }, base),
    );
    expect(created.body).toMatchObject({ applied: 'plan pro unchanged' });
    expect(await account(user)).toEqual(after);
  });

  it('keeps the newest plan when subscription events arrive out of order', async () => {
    const user = await freeUser();
    const before = await account(user);
    const newer = subscriptionEvent(
      'customer.subscription.updated',
      user,
      { status: 'active', price: testPrices.pro },
      base + 20,
    );
    const older = subscriptionEvent(
      'customer.subscription.updated',
      user,
      { status: 'active', price: testPrices.starter },
      base + 10,
    );

    expect((await deliver(newer)).body).toMatchObject({ applied: 'plan pro, new cycle' });
    const afterNewer = await account(user);
    expect(afterNewer).toMatchObject({ plan: 'pro', credits_remaining: before.credits_remaining + monthlyCredits.pro });

    expect((await deliver(older)).body).toMatchObject({ received: true, stale: true });
    // The checkout that started it all, delivered last, is older still.
    expect((await deliver(checkoutCompleted(user, 'pro', base))).body).toMatchObject({ stale: true });
    expect(await account(user)).toEqual(afterNewer);
    // Stale deliveries are recorded too: a redelivery is a plain duplicate.
    expect((await deliver(older)).body).toMatchObject({ duplicate: true });
  });

  it('moves the user to free when the subscription is deleted, and a late older update does not revive it', async () => {
    const user = await freeUser();
    await deliver(checkoutCompleted(user, 'pro', base));
    expect((await account(user)).plan).toBe('pro');

    const deleted = subscriptionEvent(
      'customer.subscription.deleted',
      user,
      { status: 'canceled', price: testPrices.pro },
      base + 100,
    );
    expect((await deliver(deleted)).body).toMatchObject({ applied: 'plan free, new cycle' });
    const afterDelete = await account(user);
    expect(afterDelete.plan).toBe('free');
    expect((await storedSubscription(user.userId)).stripe_subscription_id).toBeNull();

    const lateUpdate = subscriptionEvent(
      'customer.subscription.updated',
      user,
      { status: 'active', price: testPrices.pro },
      base + 50,
    );
    expect((await deliver(lateUpdate)).body).toMatchObject({ stale: true });
    expect(await account(user)).toEqual(afterDelete);
  });

  it('grants a renewal once per period on invoice payment', async () => {
    const user = await freeUser();
    await deliver(checkoutCompleted(user, 'pro', base));
    const subscribed = await account(user);

    const nextPeriod = base + 30 * 86_400;
    const paid = renewalInvoice('invoice.paid', user, testPrices.pro, nextPeriod, base + 200);
    expect((await deliver(paid)).body).toMatchObject({ applied: 'plan pro renewed' });
    const renewed = await account(user);
    expect(renewed).toMatchObject({
      plan: 'pro',
      credits_remaining: subscribed.credits_remaining + monthlyCredits.pro,
    });

    // Redelivery, and Stripe's companion event for the same payment, grant nothing more.
    expect((await deliver(paid)).body).toMatchObject({ duplicate: true });
    const succeeded = renewalInvoice('invoice.payment_succeeded', user, testPrices.pro, nextPeriod, base + 201);
    expect((await deliver(succeeded)).body).toMatchObject({
      ignored: 'period already covered by the current cycle',
    });
    expect(await account(user)).toEqual(renewed);
    const { rows } = await database.query<{ count: string }>(
      `select count(*) from credit_ledger where user_id = $1 and kind = 'grant' and key = $2`,
      [user.userId, `grant:${user.userId}:${new Date(nextPeriod * 1000).toISOString()}`],
    );
    expect(Number(rows[0]!.count)).toBe(1);
  });

  it('reads the events of an endpoint registered before 2025-03-31.basil as well', async () => {
    // There an invoice names its subscription at its top level and a subscription has its period on itself.
    const user = await freeUser();
    const before = await account(user);
    const updated = subscriptionEvent(
      'customer.subscription.updated',
      user,
      { status: 'active', price: testPrices.starter },
      base,
    );
    Object.assign(updated, { api_version: preBasilApiVersion });
    Object.assign(updated.data.object, { current_period_start: base, current_period_end: base + 30 * 86_400 });
    expect((await deliver(updated)).body).toMatchObject({ applied: 'plan starter, new cycle' });
    const subscribed = await account(user);
    expect(subscribed).toMatchObject({
      plan: 'starter',
      credits_remaining: before.credits_remaining + monthlyCredits.starter,
    });

    const nextPeriod = base + 30 * 86_400;
    const paid = preBasilRenewalInvoice('invoice.paid', user, testPrices.starter, nextPeriod, base + 200);
    expect((await deliver(paid)).body).toMatchObject({ applied: 'plan starter renewed' });
    const renewed = await account(user);
    expect(renewed.credits_remaining).toBe(subscribed.credits_remaining + monthlyCredits.starter);
    // The same payment reported in the current shape (after the endpoint's upgrade) is the same period.
    const succeeded = renewalInvoice('invoice.payment_succeeded', user, testPrices.starter, nextPeriod, base + 201);
    expect((await deliver(succeeded)).body).toMatchObject({
      ignored: 'period already covered by the current cycle',
    });
    expect(await account(user)).toEqual(renewed);
  });

  it('acknowledges event types it does not handle', async () => {
    const response = await deliver({
      id: stripeId('evt'),
      object: 'event',
      type: 'customer.created',
      created: base,
      data: { object: { id: stripeId('cus'), object: 'customer' } },
    });
    expect(response).toEqual({ status: 200, body: expect.objectContaining({ ignored: 'event type not handled' }) });
  });
});
