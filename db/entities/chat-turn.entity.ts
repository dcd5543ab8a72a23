import { defineEntity, p } from '@mikro-orm/core';
import { chatTurnUsageTriggers } from './usage-triggers.ts';

/**
 * A turn of a conversation: accepted (`running`, its workflow started), then `done` or `failed`. The next turn
 * waits for this row to leave `running` before it reads the history.
 *
 * Turns form a tree (docs/agent-service.md, "Regenerate, edit and branches"): a turn follows `parent` (null: the
 * conversation's first), and a turn that stands in for another (a regenerated answer, an edited message) follows the
 * same parent, so it is that turn's alternative. `path` is the set of turn numbers whose messages the turn's history
 * holds, itself included, as a PostgreSQL multirange: a conversation that never branched has one range, `{[1,n+1)}`,
 * whatever its length, and its history is read as before with `turn <@ path` added.
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
    /** The turn this one follows (its number); null: the conversation's first turn. */
    parent: p.integer().nullable(),
    /** The turn numbers of this turn's branch, from the first to itself (int4multirange). */
    path: p.string().columnType('int4multirange'),
    /**
     * The uploaded images (`uploads.id`) the turn's message carried (`image_file_ids`, or `image_file_id`), in order,
     * so a turn standing in for this one attaches them again and the history names them; empty: none. No foreign key:
     * a file may be deleted, and the turn still says it had it. An image sent inline (`image_data`) is not stored.
     */
    imageFileIds: p.array().columnType('text[]').defaultRaw(`'{}'`),
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
