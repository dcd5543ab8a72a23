/**
 * Billing through Stripe (spec 4.6): Checkout for starter/pro, the customer portal, coupon validation, and the
 * webhook that moves plans and credits.
 *
 * Webhook rules (every effect of one event happens in ONE database transaction):
 * - Authenticity: `Stripe.webhooks.constructEvent(rawBody, Stripe-Signature, STRIPE_WEBHOOK_SECRET)`; a missing or
 *   bad signature is a 400 and touches nothing.
 * - Once per event id: the transaction starts with `insert into stripe_events (id) … on conflict do nothing`; no
 *   row inserted means a duplicate (or a concurrent delivery that committed first: the insert waits on it), and
 *   the answer is 200 `{received: true, duplicate: true}` with no effect. A failed effect rolls the id back, so
 *   Stripe's retry runs it again.
 * - Any order, for plan state (checkout.session.completed, customer.subscription.created/updated/deleted): the
 *   account's row is locked, then a watermark row in the same table, `stripe_events.id = 'plan-state:<user id>'`,
 *   holds the Stripe `created` time of the newest plan-state event applied to that account. It is advanced by an
 *   upsert whose `where` refuses to go backwards; an event older than the watermark is recorded as processed and
 *   answered `{received: true, stale: true}` without changing the plan (Stripe's `created` has one-second
 *   resolution: an event of the same second as the watermark still applies). The watermark is per account, not per
 *   subscription, so a late event of a replaced subscription cannot undo the newer one either; and an ending
 *   (deleted/canceled) event for a subscription that is not the account's current one is ignored.
 * - Renewals (invoice.paid / invoice.payment_succeeded with billing_reason `subscription_cycle`) are not plan
 *   state: they start a cycle of the account's current plan at the invoice's subscription period start, when the
 *   invoice belongs to the account's current subscription (named under `parent` since 2025-03-31.basil, at the
 *   invoice's top level before: `invoiceSubscription`) and that period starts after the current cycle. The
 *   grant is keyed by (account, cycle start), so both event types, and redeliveries, grant it once. The first
 *   invoice of a subscription (`subscription_create`) and proration invoices are ignored: checkout completion and
 *   the plan change grant those cycles.
 * - Effects: checkout.session.completed → the plan in the session's metadata, a new cycle at the event's time
 *   (AccountPlans.startCycle: the monthly credits once per cycle start), customer and subscription ids stored.
 *   customer.subscription.* → active/trialing: the plan of its price (STRIPE_PRICE_STARTER/PRO); canceled, unpaid,
 *   incomplete_expired, paused, or deleted: free; past_due/incomplete: no change. A plan change starts a cycle;
 *   the same plan only records the subscription id. Moving to free clears the subscription id, so the monthly
 *   renewal schedule takes the account over again.
 * - Accounts are found by stripe_customer_id, else by client_reference_id / metadata.user_id (set by checkout on
 *   the session and on the subscription). Event types not listed are answered 200 `{received: true, ignored}`.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type Stripe from 'stripe';
import { AccountPlans } from '../../../activities/credits/accounts.ts';
import type { PlanName, PlansFile } from '../../../common/plans.ts';
import type { Settings } from '../../../config/settings.ts';
import { ApiError } from '../../errors.ts';
import type { Logger } from '../../../process/logger.ts';
import { loadOnce } from '../../../process/load-once.ts';
import type { CouponAnswer, PurchasablePlan } from './schema.ts';

export type BillingSettings = Pick<
  Settings,
  | 'STRIPE_SECRET_KEY'
  | 'STRIPE_WEBHOOK_SECRET'
  | 'STRIPE_API_BASE'
  | 'STRIPE_PRICE_STARTER'
  | 'STRIPE_PRICE_PRO'
  | 'BILLING_SUCCESS_URL'
  | 'BILLING_CANCEL_URL'
  | 'BILLING_PORTAL_RETURN_URL'
>;

export interface WebhookOutcome {
  received: true;
  event_id: string;
  type: string;
  duplicate?: true;
  stale?: true;
  ignored?: string;
  /** What changed, for logs and tests: e.g. `plan pro, cycle granted`. */
  applied?: string;
}

interface AccountRow {
  id: string;
  plan: PlanName;
  plan_cycle_start: Date | string | null;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
}

type Transaction = MikroORM['em'];

const webhookEvents = new Set([
  'checkout.session.completed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.paid',
  'invoice.payment_succeeded',
]);

/** The Stripe client options for STRIPE_API_BASE (e.g. `http://127.0.0.1:12111` for stripe-mock). */
export function stripeConfig(apiBase: string | undefined): Stripe.StripeConfig {
  const config: Stripe.StripeConfig = { maxNetworkRetries: 2, timeout: 20_000, appInfo: { name: 'tessera' } };
  if (!apiBase) return config;
  const url = new URL(apiBase);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { ...config, host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443), protocol };
}

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  typeof value === 'string' ? value : (value?.id ?? null);

export class BillingService {
  private readonly orm: MikroORM;
  private readonly plans: PlansFile;
  private readonly settings: BillingSettings;
  private readonly logger: Logger;
  /** The Stripe client, made (and the SDK imported: about 30 MiB) at the first call that needs it (issue 29). */
  private readonly stripe = loadOnce(() =>
    import('stripe').then(
      ({ default: StripeSdk }) =>
        new StripeSdk(this.settings.STRIPE_SECRET_KEY!, stripeConfig(this.settings.STRIPE_API_BASE)),
    ),
  );

  constructor(options: { orm: MikroORM; plans: PlansFile; settings: BillingSettings; logger: Logger }) {
    this.orm = options.orm;
    this.plans = options.plans;
    this.settings = options.settings;
    this.logger = options.logger;
  }

  /** A Checkout Session for a subscription to `plan`: `{checkout_url, session_id}`. */
  async checkout(userId: string, plan: PurchasablePlan): Promise<{ checkout_url: string; session_id: string }> {
    const stripe = await this.client();
    const price = this.priceOf(plan);
    if (!price) throw new ApiError('service_unavailable', `billing is not configured for the ${plan} plan`);
    const customer = await this.customerFor(stripe, userId);
    const metadata = { user_id: userId, plan };
    const session = await this.call('checkout', () =>
      stripe.checkout.sessions.create({
        mode: 'subscription',
        customer,
        client_reference_id: userId,
        line_items: [{ price, quantity: 1 }],
        metadata,
        // Subscription events carry the account too, not only the session.
        subscription_data: { metadata },
        allow_promotion_codes: true,
        success_url: this.settings.BILLING_SUCCESS_URL,
        cancel_url: this.settings.BILLING_CANCEL_URL,
      }),
    );
    if (!session.url) throw new ApiError('service_unavailable', 'the billing provider returned no checkout URL');
    return { checkout_url: session.url, session_id: session.id };
  }

  /** A customer-portal session for the account's Stripe customer: `{portal_url}`. */
  async portal(userId: string): Promise<{ portal_url: string }> {
    const stripe = await this.client();
    const account = await this.account(this.orm.em.fork(), userId);
    if (!account.stripe_customer_id) {
      throw new ApiError(
        'not_found',
        'This account has no billing profile yet: subscribe with POST /api/v1/billing/checkout',
      );
    }
    const session = await this.call('portal', () =>
      stripe.billingPortal.sessions.create({
        customer: account.stripe_customer_id!,
        return_url: this.settings.BILLING_PORTAL_RETURN_URL,
      }),
    );
    return { portal_url: session.url };
  }

  /**
   * Whether `code` is a redeemable discount: first as an active promotion code (what customers type at
   * Checkout), else as a coupon id. Unknown, inactive and no-longer-valid codes answer `{valid: false, code}`.
   * Promotion codes match in any case, as at Stripe's Checkout: the list's `code` filter is case-insensitive (and
   * an active code is unique regardless of case), so `welcome5` finds `WELCOME5`, and the answer names the code as
   * Stripe spells it. The returned code is still compared (stripe-mock ignores list filters). Coupon ids are ids:
   * exact.
   */
  async validateCoupon(code: string): Promise<CouponAnswer> {
    const stripe = await this.client();
    const promotions = await this.call('coupon', () => stripe.promotionCodes.list({ code, active: true, limit: 1 }));
    const promotion = promotions.data.find(
      (candidate) => candidate.active && candidate.code.toLowerCase() === code.toLowerCase(),
    );
    if (promotion) {
      const reference = promotion.promotion.coupon;
      const coupon =
        reference === null
          ? null
          : typeof reference === 'string'
            ? await this.retrieveCoupon(stripe, reference)
            : reference;
      if (coupon?.valid) return describeCoupon(promotion.code, 'promotion_code', coupon);
    }
    const coupon = await this.retrieveCoupon(stripe, code);
    return coupon?.valid ? describeCoupon(code, 'coupon', coupon) : { valid: false, code };
  }

  /** Verifies and applies one webhook delivery. */
  async webhook(rawBody: Buffer, signature: string | undefined): Promise<WebhookOutcome> {
    const secret = this.settings.STRIPE_WEBHOOK_SECRET;
    if (!secret) throw new ApiError('service_unavailable', 'billing is not configured');
    if (!signature) throw new ApiError('invalid_request', 'Missing Stripe-Signature header');
    let event: Stripe.Event;
    try {
      const { default: StripeSdk } = await import('stripe');
      event = StripeSdk.webhooks.constructEvent(rawBody, signature, secret);
    } catch (error) {
      this.logger.warn({ err: error }, 'rejected a Stripe webhook');
      throw new ApiError('invalid_request', 'Invalid Stripe signature or payload');
    }
    const outcome = await this.apply(event);
    this.logger.info(outcome, 'stripe webhook');
    return outcome;
  }

  /** Applies a verified event once (see the file comment for the rules). */
  async apply(event: Stripe.Event): Promise<WebhookOutcome> {
    const base = { received: true as const, event_id: event.id, type: event.type };
    if (!webhookEvents.has(event.type)) return { ...base, ignored: 'event type not handled' };
    return this.orm.em.fork().transactional(async (em) => {
      const inserted = await em.execute<Array<{ id: string }>>(
        `insert into stripe_events (id, type, created_at_stripe, processed_at) values (?, ?, ?, now())
         on conflict (id) do nothing returning id`,
        [event.id, event.type, event.created],
      );
      if (inserted.length === 0) return { ...base, duplicate: true as const };
      const result = await this.effect(em, event);
      return { ...base, ...result };
    });
  }

  private async effect(
    em: Transaction,
    event: Stripe.Event,
  ): Promise<{ stale?: true; ignored?: string; applied?: string }> {
    const at = new Date(event.created * 1000);
    // The plan update and the grant in this transaction.
    const accounts = AccountPlans.within(em, this.plans);

    switch (event.type) {
      case 'checkout.session.completed': {
        const session = event.data.object;
        if (session.mode !== 'subscription') return { ignored: 'not a subscription checkout' };
        if (session.payment_status === 'unpaid') return { ignored: 'checkout not paid yet' };
        const plan = this.paidPlan(session.metadata?.plan);
        if (!plan) return { ignored: 'no purchasable plan in the session metadata' };
        const customerId = idOf(session.customer);
        const subscriptionId = idOf(session.subscription);
        const account = await this.lockAccount(
          em,
          customerId,
          session.client_reference_id ?? session.metadata?.user_id,
        );
        if (!account) return { ignored: 'no matching account' };
        await this.linkCustomer(em, account, customerId);
        if (!(await this.advanceWatermark(em, account.id, event.created))) return { stale: true };
        await accounts.startCycle(account.id, plan, at, 'checkout completed');
        await em.execute(
          'update users set stripe_subscription_id = ? where id = ?',
          [subscriptionId, account.id],
          'run',
        );
        return { applied: `plan ${plan}, new cycle` };
      }

      case 'customer.subscription.created':
      case 'customer.subscription.updated':
      case 'customer.subscription.deleted': {
        const subscription = event.data.object;
        const target = event.type === 'customer.subscription.deleted' ? 'free' : this.planOfSubscription(subscription);
        if (typeof target === 'object') return target;
        const customerId = idOf(subscription.customer);
        const account = await this.lockAccount(em, customerId, subscription.metadata?.user_id);
        if (!account) return { ignored: 'no matching account' };
        if (
          target === 'free' &&
          account.stripe_subscription_id !== null &&
          account.stripe_subscription_id !== subscription.id
        ) {
          return { ignored: 'not the account’s current subscription' };
        }
        await this.linkCustomer(em, account, customerId);
        if (!(await this.advanceWatermark(em, account.id, event.created))) return { stale: true };
        const changed = target !== account.plan;
        if (changed) await accounts.startCycle(account.id, target, at, event.type);
        await em.execute(
          'update users set stripe_subscription_id = ? where id = ?',
          [target === 'free' ? null : subscription.id, account.id],
          'run',
        );
        return { applied: changed ? `plan ${target}, new cycle` : `plan ${target} unchanged` };
      }

      case 'invoice.paid':
      case 'invoice.payment_succeeded': {
        const invoice = event.data.object;
        if (invoice.billing_reason !== 'subscription_cycle') return { ignored: 'not a renewal invoice' };
        const { subscriptionId, userId } = invoiceSubscription(invoice);
        if (!subscriptionId) return { ignored: 'not a subscription invoice' };
        const account = await this.lockAccount(em, idOf(invoice.customer), userId);
        if (!account) return { ignored: 'no matching account' };
        if (account.stripe_subscription_id !== subscriptionId) {
          return { ignored: 'not the account’s current subscription' };
        }
        if (account.plan === 'free') return { ignored: 'the account is on the free plan' };
        const line = invoice.lines.data.find(isSubscriptionLine);
        // The renewal line's period is the new one (the invoice's own period_start/end cover the one that ended).
        const periodStart = new Date(((line ?? invoice.lines.data[0])?.period.start ?? invoice.period_end) * 1000);
        const current = account.plan_cycle_start ? new Date(account.plan_cycle_start).getTime() : -Infinity;
        if (periodStart.getTime() <= current) return { ignored: 'period already covered by the current cycle' };
        await accounts.startCycle(account.id, account.plan, periodStart, 'subscription renewal');
        return { applied: `plan ${account.plan} renewed` };
      }

      default:
        return { ignored: 'event type not handled' };
    }
  }

  /** The account an event is about, locked for this transaction: by Stripe customer, else by our user id. */
  private async lockAccount(
    em: Transaction,
    customerId: string | null,
    userId: string | null | undefined,
  ): Promise<AccountRow | null> {
    const columns = 'id, plan, plan_cycle_start, stripe_customer_id, stripe_subscription_id';
    if (customerId) {
      const [byCustomer] = await em.execute<AccountRow[]>(
        `select ${columns} from users where stripe_customer_id = ? for update`,
        [customerId],
      );
      if (byCustomer) return byCustomer;
    }
    if (!userId) return null;
    const [byId] = await em.execute<AccountRow[]>(`select ${columns} from users where id = ? for update`, [userId]);
    return byId ?? null;
  }

  /** Stores the customer id on an account that has none, unless another account already owns it. */
  private async linkCustomer(em: Transaction, account: AccountRow, customerId: string | null): Promise<void> {
    if (!customerId || account.stripe_customer_id) return;
    await em.execute(
      `update users set stripe_customer_id = ? where id = ? and stripe_customer_id is null
         and not exists (select 1 from users other where other.stripe_customer_id = ?)`,
      [customerId, account.id, customerId],
      'run',
    );
  }

  /** Moves the account's plan-state watermark to `created`; false when a newer event was applied already. */
  private async advanceWatermark(em: Transaction, userId: string, created: number): Promise<boolean> {
    const rows = await em.execute<Array<{ id: string }>>(
      `insert into stripe_events (id, type, created_at_stripe, processed_at)
       values (?, 'tessera.plan_state_watermark', ?, now())
       on conflict (id) do update set created_at_stripe = excluded.created_at_stripe, processed_at = excluded.processed_at
       where stripe_events.created_at_stripe <= excluded.created_at_stripe
       returning id`,
      [`plan-state:${userId}`, created],
    );
    return rows.length === 1;
  }

  /** The plan a subscription in this state stands for, or why the event changes nothing. */
  private planOfSubscription(subscription: Stripe.Subscription): PlanName | { ignored: string } {
    switch (subscription.status) {
      case 'active':
      case 'trialing': {
        const price = subscription.items.data[0]?.price.id;
        const plan = price ? this.planOfPrice(price) : null;
        return plan ?? { ignored: `price ${price ?? '(none)'} is not a configured plan price` };
      }
      case 'canceled':
      case 'unpaid':
      case 'incomplete_expired':
      case 'paused':
        return 'free';
      default:
        // past_due: Stripe is retrying the payment; incomplete: checkout has not completed. Keep the plan.
        return { ignored: `subscription status ${subscription.status} changes nothing` };
    }
  }

  private priceOf(plan: PurchasablePlan): string | undefined {
    return plan === 'starter' ? this.settings.STRIPE_PRICE_STARTER : this.settings.STRIPE_PRICE_PRO;
  }

  private planOfPrice(price: string): PurchasablePlan | null {
    if (price === this.settings.STRIPE_PRICE_STARTER) return 'starter';
    if (price === this.settings.STRIPE_PRICE_PRO) return 'pro';
    return null;
  }

  private paidPlan(value: string | undefined): PurchasablePlan | null {
    return value === 'starter' || value === 'pro' ? value : null;
  }

  private client(): Promise<Stripe> {
    if (!this.settings.STRIPE_SECRET_KEY) throw new ApiError('service_unavailable', 'billing is not configured');
    return this.stripe();
  }

  private async account(em: Transaction, userId: string) {
    const [row] = await em.execute<Array<AccountRow & { email: string | null }>>(
      'select id, email, plan, plan_cycle_start, stripe_customer_id, stripe_subscription_id from users where id = ?',
      [userId],
    );
    if (!row) throw new ApiError('not_found', `No account ${userId}`);
    return row;
  }

  /** The account's Stripe customer, created (once, idempotently) on first checkout. */
  private async customerFor(stripe: Stripe, userId: string): Promise<string> {
    const em = this.orm.em.fork();
    const account = await this.account(em, userId);
    if (account.stripe_customer_id) return account.stripe_customer_id;
    const customer = await this.call('customer', () =>
      stripe.customers.create(
        { ...(account.email ? { email: account.email } : {}), metadata: { user_id: userId } },
        { idempotencyKey: `tessera-customer-${userId}` },
      ),
    );
    try {
      const updated = await em.execute<Array<{ id: string }>>(
        'update users set stripe_customer_id = ? where id = ? and stripe_customer_id is null returning id',
        [customer.id, userId],
      );
      if (updated.length === 1) return customer.id;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new ApiError('conflict', 'The Stripe customer is linked to another account');
      }
      throw error;
    }
    // A concurrent checkout linked a customer first: use that one.
    return (await this.account(em, userId)).stripe_customer_id!;
  }

  private async retrieveCoupon(stripe: Stripe, id: string): Promise<Stripe.Coupon | null> {
    try {
      return await stripe.coupons.retrieve(id);
    } catch (error) {
      const { default: StripeSdk } = await import('stripe'); // loaded with the client already
      if (error instanceof StripeSdk.errors.StripeInvalidRequestError) return null; // no such coupon
      throw this.unavailable('coupon', error);
    }
  }

  /** Runs a Stripe call; any failure is a 503 (the caller cannot fix it) and the details go to the log. */
  private async call<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw this.unavailable(what, error);
    }
  }

  private unavailable(what: string, error: unknown): ApiError {
    this.logger.error({ err: error, what }, 'stripe request failed');
    return new ApiError('service_unavailable', 'The billing provider could not complete the request');
  }
}

/**
 * Events come in the API version of the webhook endpoint they were sent to, not the one this package pins
 * (docs/gateway.md, "Billing"). Since 2025-03-31.basil an invoice names its subscription under
 * `parent.subscription_details` and a subscription's line says so in `parent.type`; before, the invoice had
 * `subscription` and `subscription_details` at its top level and the line a `type` of `subscription`. Both are read.
 */
interface PreBasilInvoice {
  subscription?: string | { id: string } | null;
  subscription_details?: { metadata?: Record<string, string> | null } | null;
}

/** The renewal invoice's subscription and the user id its metadata carries, in either shape. */
function invoiceSubscription(invoice: Stripe.Invoice): { subscriptionId: string | null; userId: string | undefined } {
  const details = invoice.parent?.subscription_details;
  if (details) return { subscriptionId: idOf(details.subscription), userId: details.metadata?.user_id };
  const legacy = invoice as unknown as PreBasilInvoice;
  return { subscriptionId: idOf(legacy.subscription), userId: legacy.subscription_details?.metadata?.user_id };
}

/** Whether an invoice line is the subscription's own (not a one-off item), in either shape. */
function isSubscriptionLine(line: Stripe.InvoiceLineItem): boolean {
  if (line.parent) return line.parent.type === 'subscription_item_details';
  return (line as unknown as { type?: string }).type === 'subscription';
}

function describeCoupon(code: string, source: 'promotion_code' | 'coupon', coupon: Stripe.Coupon): CouponAnswer {
  return {
    valid: true,
    code,
    source,
    name: coupon.name,
    percent_off: coupon.percent_off,
    amount_off: coupon.amount_off,
    currency: coupon.currency,
    duration: coupon.duration,
    duration_in_months: coupon.duration_in_months,
  };
}
