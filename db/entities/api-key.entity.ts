import { defineEntity, p } from '@mikro-orm/core';
import { principalTriggers } from './principal-triggers.ts';
import { User } from './user.entity.ts';

/** An API key. Only the SHA-256 of the secret is stored; `preview` is what listings show. */
export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    user: () => p.manyToOne(User).index(),
    name: p.string().nullable(),
    secretHash: p.string().unique(),
    preview: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
  // Each API replica caches who a key belongs to (api/principal-cache.ts) and forgets it on this notification.
  triggers: principalTriggers('api_keys', 'user_id', ['revoked_at', 'user_id']),
});
