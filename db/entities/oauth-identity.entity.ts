import { defineEntity, p } from '@mikro-orm/core';
import { User } from './user.entity.ts';

/**
 * An account at an identity provider (Google) joined to a user: the scopes it granted, its refresh token and current
 * access token encrypted with AES-256-GCM (activities/google/token-cipher.ts), for the workspace tools to act for the
 * user (activities/google/google-accounts.ts).
 */
export const OAuthIdentity = defineEntity({
  name: 'OAuthIdentity',
  tableName: 'oauth_identities',
  properties: {
    id: p.string().primary(),
    user: () => p.manyToOne(User).index(),
    /** `google`. */
    provider: p.string(),
    /** The provider's stable id for the account (`sub`). */
    subject: p.string(),
    /** The verified e-mail the provider vouched for at the last login. */
    email: p.string(),
    scopes: p.json<string[]>(),
    /** `v1.<iv>.<tag>.<ciphertext>` (base64url); null when the provider granted none. */
    refreshTokenEncrypted: p.text().nullable(),
    /** The current access token (same form); null until the first login that stores one, and after a revocation. */
    accessTokenEncrypted: p.text().nullable(),
    accessTokenExpiresAt: p.datetime().nullable(),
    /** When Google refused the refresh token (`invalid_grant`): both tokens were deleted then; a login clears it. */
    revokedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ['provider', 'subject'] }],
});
