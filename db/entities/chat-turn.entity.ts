import { defineEntity, p } from '@mikro-orm/core';
import { chatTurnUsageTriggers } from './usage-triggers.ts';

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
    /** The agent that answered (the agent service's turns); null for the gateway's session chat. */
    agentId: p.string().nullable(),
    /** Set while a tool call of the turn waits for a person's approval: that wait's deadline. */
    approvalExpiresAt: p.datetime().nullable(),
  },
  uniques: [{ properties: ['conversationId', 'number'] }],
  // The operator console's turns (api/services/admin/), newest first, of everyone or of an owner's conversations;
  // and the approvals waiting (GET /metrics), a range scan over the few turns that wait.
  indexes: [
    { properties: ['conversationId', 'createdAt', 'agentId', 'status'] },
    { properties: ['createdAt', 'agentId', 'status'] },
    { properties: ['approvalExpiresAt'] },
  ],
  // The dashboard's turns per day and per agent, and its credits per agent (api/services/dashboard/).
  triggers: chatTurnUsageTriggers,
});
