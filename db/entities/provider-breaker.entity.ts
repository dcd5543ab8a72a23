import { defineEntity, p } from '@mikro-orm/core';

/**
 * Circuit-breaker state of one provider, shared by every API and worker replica.
 * closed → open after `failureThreshold` consecutive failures; open → half-open once the cool-down passed
 * and one replica claims the probe (`probeStartedAt`); the probe's outcome closes or re-opens it.
 */
export const ProviderBreaker = defineEntity({
  name: 'ProviderBreaker',
  tableName: 'provider_breakers',
  properties: {
    provider: p.string().primary(),
    state: p.string().default('closed'),
    consecutiveFailures: p.integer().default(0),
    openedAt: p.datetime().nullable(),
    probeStartedAt: p.datetime().nullable(),
    lastError: p.text().nullable(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
