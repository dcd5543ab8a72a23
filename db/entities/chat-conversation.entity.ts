import { defineEntity, p } from '@mikro-orm/core';
import { chatConversationUsageTriggers } from './usage-triggers.ts';

/**
 * A conversation: one history shared by every session linked to it (web, api, messaging apps). Its turns are
 * numbered here, in the order they were accepted, and answered in that order (see workflows/chat-turn.workflow.ts).
 */
export const ChatConversation = defineEntity({
  name: 'ChatConversation',
  tableName: 'chat_conversations',
  properties: {
    id: p.string().primary(),
    /** `user:<id>` or `guest`. */
    owner: p.string(),
    /** Turns accepted so far (the last turn's number). */
    turns: p.integer().default(0),
    /**
     * The branch the conversation is on: the `path` of the turn the next message follows (ChatTurn.path; empty before
     * the first turn). Every linked session shows and continues this branch (`PUT /sessions/{id}/branch` moves it).
     */
    headPath: p.string().columnType('int4multirange').defaultRaw(`'{}'::int4multirange`),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  // A user's conversations.
  indexes: [{ properties: ['owner'] }],
  // A conversation that changes owner (or comes or goes) takes its messages and turns along in the dashboard's
  // figures (api/services/dashboard/).
  triggers: chatConversationUsageTriggers,
});
