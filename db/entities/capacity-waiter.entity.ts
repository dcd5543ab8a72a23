import { defineEntity, p } from '@mikro-orm/core';

/**
 * A job in the durable capacity queue (activities/capacity/capacity-queue.ts): waiting while `grantedAt` is null,
 * holding one of its account's slots once set; gone when the job ends. `holder` is the job's workflow id.
 */
export const CapacityWaiter = defineEntity({
  name: 'CapacityWaiter',
  tableName: 'capacity_waiters',
  properties: {
    holder: p.string().primary(),
    userId: p.string(),
    model: p.string(),
    kind: p.string(),
    planRank: p.integer(),
    /** 0 low, 1 normal, 2 high. */
    priority: p.integer(),
    enqueuedAt: p.datetime(),
    grantedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['userId', 'grantedAt'] }, { properties: ['model', 'grantedAt'] }],
});

/**
 * A model every provider of which was found saturated (429, overloaded, circuit open): jobs of it wait until
 * `saturatedUntil`, then the first of them in the queue's order probes; its answer clears the row, its failure doubles
 * `backoffMs` (at most a minute).
 */
export const CapacityModel = defineEntity({
  name: 'CapacityModel',
  tableName: 'capacity_models',
  properties: {
    model: p.string().primary(),
    saturatedUntil: p.datetime(),
    backoffMs: p.integer(),
  },
});
