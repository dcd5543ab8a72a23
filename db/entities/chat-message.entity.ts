import { defineEntity, p } from '@mikro-orm/core';

/**
 * One message of a conversation, tagged with the channel it came through: the user's, the assistant's (with the
 * tool calls it asked for) and each tool's result. `(conversation, turn, seq)` is unique, so a retried activity
 * stores a message once.
 */
export const ChatMessage = defineEntity({
  name: 'ChatMessage',
  tableName: 'chat_messages',
  properties: {
    id: p.bigint().primary().autoincrement(),
    conversationId: p.string(),
    sessionId: p.string(),
    turn: p.integer(),
    seq: p.integer(),
    role: p.string(),
    content: p.text().nullable(),
    toolCalls: p
      .json<Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>>()
      .nullable(),
    toolCallId: p.string().nullable(),
    toolName: p.string().nullable(),
    channel: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ['conversationId', 'turn', 'seq'] }],
});
