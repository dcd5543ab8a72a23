import { defineEntity, p } from '@mikro-orm/core';
import { principalTriggers } from './principal-triggers.ts';

/**
 * A customer account: plan, credit balance and the credits held by reservations in flight. The balance and
 * hold are kept consistent with the credit ledger in the same transaction as every ledger entry.
 */
export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    /** Normalised (common/email.ts): unique per address, whatever capitals it was typed with. */
    email: p.string().nullable().unique(),
    plan: p.string().default('free'),
    creditsBalance: p.integer().default(0),
    creditsHeld: p.integer().default(0),
    /** Start of the current plan cycle: monthly credits are granted from here. */
    planCycleStart: p.datetime().nullable(),
    /** Operator-set overrides for business accounts: rate limits, allowed models. */
    customLimits: p.json<{ per_hour?: number | null; per_day?: number | null; models?: string[] | 'all' }>().nullable(),
    stripeCustomerId: p.string().nullable().unique(),
    stripeSubscriptionId: p.string().nullable(),
    /**
     * `user`, or `admin`: a person who may open the operator console (`/admin`) from their logged-in browser
     * (api/services/admin/operators.ts). Granted and revoked from a shell: `npm run admin -- grant-admin --email …`.
     */
    role: p.string().default('user'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  // One account per address: the address is stored in its normalised form (common/email.ts), and this check makes
  // the database refuse any other, so the unique index on `email` is a unique index on the normalised address.
  // Storing the normalised value (rather than a unique index on lower(email) over addresses kept as typed) keeps
  // every lookup a plain equality, here and in the tables that hold an address (team invitations, login tokens,
  // OAuth identities), and a path that forgot to normalise fails loudly instead of making a second account.
  checks: [
    { name: 'users_email_normalised', expression: 'email = lower(btrim(email))' },
    { name: 'users_role_known', expression: "role in ('user', 'admin')" },
  ],
  indexes: [
    // The console's user search by address prefix (api/services/admin/service.ts, `users`): a range of the address in
    // byte order, whatever the database's collation. The unique index on `email` is in the database's collation,
    // where a prefix is not a range (en_US sorts by letters first, punctuation later), so it cannot answer it.
    { name: 'users_email_prefix_index', columns: [{ name: 'email', collation: 'C' }] },
    // Everyone, newest first, a page at a time (the console's user list without a search).
    { properties: ['createdAt', 'id'] },
  ],
  // Each API replica caches who a key belongs to (api/principal-cache.ts) and forgets it on this notification.
  triggers: principalTriggers('users', 'id', ['plan', 'custom_limits']),
});
