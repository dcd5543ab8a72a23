import { defineEntity, p } from '@mikro-orm/core';

/**
 * A 6-digit code that links another channel's session to this one (spec 4.9): made by `/link`, used once by
 * `/link CODE` within its lifetime. Only the code's hash is kept; a session has at most one live code.
 */
export const ChatLinkCode = defineEntity({
  name: 'ChatLinkCode',
  tableName: 'chat_link_codes',
  properties: {
    /** sha256 of the code. */
    codeHash: p.string().primary(),
    /** The session that asked for it (chat_sessions.id); the one that uses it joins its conversation. */
    sessionId: p.string().unique(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
