import { defineEntity, p } from '@mikro-orm/core';
import { creditLedgerUsageTriggers } from './usage-triggers.ts';
import { User } from './user.entity.ts';

/**
 * The credit ledger: append-only, one row per money movement. `key` makes every write idempotent: a
 * completion's rows are keyed `<workflow id>#<attempt>:<kind>`, a grant `grant:<user>:<cycle start>`, a Stripe
 * effect `stripe:<event id>`, so retries, replays and failover never count twice.
 *
 * Kinds and their effect on the account (amount in credits):
 * - grant, purchase, adjust: balance += amount
 * - reserve: held += amount (the worst case of an attempt, before any upstream call)
 * - settle: balance -= amount; held -= the attempt's reservation
 * - release: held -= amount (an attempt that failed, or a hold whose workflow does not run)
 */
export const CreditLedgerEntry = defineEntity({
  name: 'CreditLedgerEntry',
  tableName: 'credit_ledger',
  properties: {
    id: p.bigint().primary().autoincrement(),
    key: p.string().unique(),
    user: () => p.manyToOne(User).index(),
    kind: p.string(),
    amount: p.integer(),
    workflowId: p.string().nullable().index(),
    attempt: p.integer().nullable(),
    model: p.string().nullable(),
    promptTokens: p.integer().nullable(),
    completionTokens: p.integer().nullable(),
    /** The provider reported no usage: tokens were counted with a tokenizer. */
    estimated: p.boolean().default(false),
    note: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  // A user's settlements in a period, read from the index alone (the account's usage, api/services/account/).
  indexes: [{ properties: ['user', 'kind', 'createdAt', 'amount', 'workflowId'] }],
  // The dashboard's credits per day and per agent (api/services/dashboard/), counted as settlements are written.
  triggers: creditLedgerUsageTriggers,
});
