import { defineEntity, p } from '@mikro-orm/core';

/**
 * An OAuth login in flight: made by `GET /auth/google`, used once by its callback within 10 minutes. Keyed by the
 * SHA-256 of the `state` parameter; keeps the nonce and the PKCE verifier the callback checks the answer against.
 */
export const OAuthLoginState = defineEntity({
  name: 'OAuthLoginState',
  tableName: 'oauth_login_states',
  properties: {
    stateHash: p.string().primary(),
    provider: p.string(),
    nonce: p.string(),
    codeVerifier: p.string(),
    expiresAt: p.datetime().index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
