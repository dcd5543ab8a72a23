import { defineEntity, p } from '@mikro-orm/core';

/**
 * Outgoing mail by idempotency key (activities/mail/mailer.ts): a send claims its key here first, so a retried send
 * with the same key goes out once. `sent_at` is set once the transport accepted it.
 */
export const SentMail = defineEntity({
  name: 'SentMail',
  tableName: 'sent_mails',
  properties: {
    idempotencyKey: p.string().primary(),
    /** The id answered to the caller (the SMTP Message-ID, or a local id when mail is only logged). */
    messageId: p.string(),
    recipient: p.string(),
    subject: p.text(),
    /** `smtp` or `log`. */
    transport: p.string(),
    claimedAt: p.datetime(),
    sentAt: p.datetime().nullable(),
  },
});
