import { defineEntity, p } from '@mikro-orm/core';

/**
 * A session as a client names it (`api:default`, a messaging app's chat), owned by a user or a guest. Its messages
 * live in its conversation, which linked sessions share.
 */
export const ChatSession = defineEntity({
  name: 'ChatSession',
  tableName: 'chat_sessions',
  properties: {
    id: p.string().primary(),
    /** `user:<id>` or `guest`: a guest session is reachable by its key alone, never by a keyed user. */
    owner: p.string(),
    /** The key the client uses (`session_id`). */
    key: p.string(),
    /** The channel it was created on (`api`, `web`, …). */
    channel: p.string(),
    conversationId: p.string().index(),
    /** The owner's own title (`PATCH /sessions/{id}`); null: lists show the conversation's first user message. */
    title: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ['owner', 'key'] }],
});
