import { defineEntity, p } from '@mikro-orm/core';

/**
 * The credit holds still open: one row per reservation (the ledger's `reserve` row of the same key) that no settle
 * or release has closed yet. The ledger's own statements insert it with the reservation and delete it with the
 * settle or release that lifts it (activities/credits/credit-ledger.ts), so an account's `credits_held` is the sum of
 * its rows, and deleting the row is what lets exactly one of a racing settle and release lift the hold.
 * The sweep of abandoned holds reads it by age (activities/credits/abandoned-holds.ts): it holds only what is in
 * flight, so that read stays one small index scan however long the ledger grows. No foreign key to `users`: the row
 * is inserted from the account row the same statement just updated, and a check per reservation would cost the hot
 * path for nothing.
 */
export const CreditHold = defineEntity({
  name: 'CreditHold',
  tableName: 'credit_holds',
  properties: {
    /** The reservation's ledger key, `<workflow id>#<attempt>:reserve`. */
    key: p.string().primary(),
    userId: p.string(),
    /** The workflow whose saga settles or releases the hold (the sweep asks Temporal about it). */
    workflowId: p.string(),
    attempt: p.integer(),
    amount: p.integer(),
    createdAt: p.datetime().index(),
  },
});
