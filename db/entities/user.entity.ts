import { defineEntity, p } from '@mikro-orm/core';

/** A customer account. Plans and credits arrive with the billing issue; `plan` is already recorded. */
export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    email: p.string().nullable().unique(),
    plan: p.string().default('free'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
