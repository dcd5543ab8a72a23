import { defineEntity, p } from '@mikro-orm/core';

/**
 * A read-only public link to a conversation (`POST /share/{session_id}`, served at `GET /s/{token}`). Only the
 * SHA-256 of the link's token is kept (the token is 32 random bytes, shown once). The link shows the session's
 * conversation as it was when it was made: the branch it was on (`turns`), its messages up to `lastMessageId` (chat_messages.id; messages keep their
 * ids when linking moves them). It stops working when revoked (`revokedAt`), past `expiresAt`, or when the session is
 * deleted. Reads and writes go through api/services/sharing/share-store.ts (plain SQL).
 */
export const ConversationShare = defineEntity({
  name: 'ConversationShare',
  tableName: 'conversation_shares',
  properties: {
    /** `shr_…` */
    id: p.string().primary(),
    /** sha256 (hex) of the token. */
    tokenHash: p.string().unique(),
    /** `user:<id>`: who made it. */
    owner: p.string(),
    /** The shared session (chat_sessions.id). */
    sessionId: p.string().index(),
    /** The newest message shown (0: the conversation had none yet). */
    lastMessageId: p.bigint('number'),
    /** The turns of the branch the conversation was on (int4multirange); null: every turn (links made before branches). */
    turns: p.string().columnType('int4multirange').nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
