import { defineEntity, p } from '@mikro-orm/core';
import { User } from './user.entity.ts';

/**
 * A browser's login to the agent service (the `tessera_session` cookie). Only the SHA-256 of the cookie's value is
 * kept; logging out sets `revoked_at`, so the cookie stops working at once whatever the browser keeps.
 */
export const WebSession = defineEntity({
  name: 'WebSession',
  tableName: 'web_sessions',
  properties: {
    id: p.string().primary(),
    tokenHash: p.string().unique(),
    user: () => p.manyToOne(User).index(),
    /** How it was made: `magic_link` or `google`. */
    method: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
});
