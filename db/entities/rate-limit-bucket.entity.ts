import { defineEntity, p } from '@mikro-orm/core';

/**
 * Counters of rate-limiter-flexible's PostgreSQL store, shared by every API replica. The table's shape is the
 * library's own (key, points, expire); it is created here so the library never issues DDL at run time.
 */
export const RateLimitBucket = defineEntity({
  name: 'RateLimitBucket',
  tableName: 'rate_limits',
  properties: {
    key: p.string().primary(),
    points: p.integer().default(0),
    expire: p.bigint().nullable(),
  },
});
