import { defineEntity, p } from '@mikro-orm/core';

/**
 * A magic-link token (spec 4.3): `POST /auth/register` mails it, `GET /auth/verify` uses it once. Only the SHA-256
 * of the token is kept, so the table cannot log anyone in; `consumed_at` makes it single-use.
 */
export const LoginToken = defineEntity({
  name: 'LoginToken',
  tableName: 'login_tokens',
  properties: {
    /** sha256 (hex) of the token in the link. */
    tokenHash: p.string().primary(),
    /** The address it was sent to: the account it logs into (created on first login). */
    email: p.string(),
    expiresAt: p.datetime().index(),
    consumedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
