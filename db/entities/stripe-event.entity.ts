import { defineEntity, p } from '@mikro-orm/core';

/** Stripe webhook events already processed: each event id takes effect once, whatever the delivery count. */
export const StripeEvent = defineEntity({
  name: 'StripeEvent',
  tableName: 'stripe_events',
  properties: {
    id: p.string().primary(),
    type: p.string(),
    /** Unix time the event was created at Stripe: lets out-of-order deliveries be recognised as stale. */
    createdAtStripe: p.bigint(),
    processedAt: p.datetime().onCreate(() => new Date()),
  },
});
