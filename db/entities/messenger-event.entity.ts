import { defineEntity, p } from '@mikro-orm/core';

/**
 * An inbound messaging-app event (a LINE webhook event, a Telegram update), recorded before it is acted on so a
 * redelivery is recognised: `input` is the prepared `messengerMessage` workflow input, kept until the workflow has
 * started so an event whose handler died in between is started on its redelivery (api/gateway/routes/webhooks/inbound.ts).
 */
export const MessengerEvent = defineEntity({
  name: 'MessengerEvent',
  tableName: 'messenger_events',
  properties: {
    /** `<platform>:<the platform's event id>`. */
    id: p.string().primary(),
    input: p.json<Record<string, unknown>>().nullable(),
    started: p.boolean().default(false),
    /**
     * Parts of the answer handed to the platform so far: Telegram has no idempotency key, so a retried send starts
     * after the parts already sent.
     */
    repliedParts: p.integer().default(0),
    createdAt: p
      .datetime()
      .onCreate(() => new Date())
      .index(),
  },
});
