import { defineEntity, p } from '@mikro-orm/core';

/**
 * A turn of a conversation: accepted (`running`, its workflow started), then `done` or `failed`. The next turn
 * waits for this row to leave `running` before it reads the history.
 */
export const ChatTurn = defineEntity({
  name: 'ChatTurn',
  tableName: 'chat_turns',
  properties: {
    /** The turn workflow's id. */
    id: p.string().primary(),
    conversationId: p.string(),
    number: p.integer(),
    status: p.string().default('running'),
    createdAt: p.datetime().onCreate(() => new Date()),
    finishedAt: p.datetime().nullable(),
    /** The agent service's routing call for this turn (a completion workflow): its cost counts in the session's usage. */
    routingWorkflowId: p.string().nullable(),
  },
  uniques: [{ properties: ['conversationId', 'number'] }],
});
