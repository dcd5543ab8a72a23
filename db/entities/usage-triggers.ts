/**
 * The triggers that keep the dashboard's daily usage figures (api/services/dashboard/service.ts), written by PostgreSQL
 * in the writer's own transaction, so every writer is counted (session chat, agent turns, scheduled runs, webhooks,
 * A2A, team broadcasts, migrations, a hand-run statement) and the figures cannot drift from the rows.
 *
 * Each trigger appends signed changes (+1 for a row that counts, -1 for one that stops counting, both for an update
 * that moves a row from one day, owner, tool or agent to another) to `usage_message_changes`, `usage_turn_changes` or
 * `usage_credit_changes`: a plain insert into a table without index, never an update of a shared row, so a writer
 * takes no lock another writer waits for (two turns of one account, or every guest's, would otherwise queue on one
 * counter row, and could deadlock on two). The API process folds the changes into the daily tables (`usage_*_days`,
 * one row per owner, day and tool or agent, and the platform's, subject `*`) once they pile up
 * (api/services/dashboard/usage-fold.ts); a figure is the sum of both, so it is exact whether or not the changes were
 * folded yet. Tables and backfill: migrations `usage-rollups` and `usage-platform-days`.
 *
 * What counts, as the dashboard counted it from the rows before:
 * - a message: for its conversation's owner now (`chat_conversations.owner`; `''` while the conversation row does
 *   not exist), its UTC day and its `tool_name` (null for all but tool results);
 * - a turn: likewise by owner and day, with its agent, and whether it `failed`;
 * - a settlement (`credit_ledger`, kind `settle`): for the account charged (`user_id`), by day, with the agent of the
 *   chat turn its workflow is (`chat_turns.id = workflow_id`, ids `chat-…`; null when none).
 *
 * Rows that change what they count for are moved by the triggers of the rows they depend on: a conversation whose
 * owner changes (linking, a deleted session's conversation passing to the next owner, an account merge) moves its
 * messages and turns from the old owner to the new one (recounted from its rows: a rare operation); one that is
 * inserted or deleted moves them from or to `''`; a turn inserted, deleted or given another agent moves its
 * workflow's settlements between agents.
 *
 * A move recounts the rows its transaction sees: rows of that conversation written by a transaction not yet committed
 * would be left with the old owner. The platform never does both at once: linking and session deletion lock the
 * conversation and refuse while one of its turns runs (ConversationStore.linkConversations, deleteSession), and a
 * turn's rows are written while it runs.
 *
 * Bodies are plpgsql in MikroORM's trigger form (the body between `begin` and `end`); no `--` comments in them (the
 * schema tools join their lines). Their conditions sit in the body, not in a WHEN clause (principal-triggers.ts).
 */

/** The tables the triggers write (changes) and the fold keeps (days), left out of the ORM's schema (db/orm.ts). */
export const usageTables = [
  'usage_message_days',
  'usage_message_changes',
  'usage_turn_days',
  'usage_turn_changes',
  'usage_credit_days',
  'usage_credit_changes',
];

const day = (row: 'old' | 'new') => `(${row}.created_at at time zone 'UTC')::date`;

/** The owner a conversation's rows count for: its owner, or `''` while it has no row. */
const ownerOf = (conversationId: string) =>
  `coalesce((select c.owner from chat_conversations c where c.id = ${conversationId}), '')`;

/** The agent a settlement's workflow answered as: the chat turn's agent, when the workflow is a chat turn. */
const agentOf = (workflowId: string) =>
  `(select t.agent_id from chat_turns t where ${workflowId} like 'chat-%' and t.id = ${workflowId})`;

/** An update that changes none of `values` (a column's name, or an expression of the row). */
const unchanged = (values: Array<string | ((row: 'old' | 'new') => string)>) =>
  values
    .map((value) => (typeof value === 'string' ? (row: string) => `${row}.${value}` : value))
    .map((value) => `${value('old')} is not distinct from ${value('new')}`)
    .join(' and ');

const trigger = (table: string, body: string) => [
  {
    name: `${table}_usage`,
    timing: 'after' as const,
    events: ['insert' as const, 'update' as const, 'delete' as const],
    body,
  },
];

export const chatMessageUsageTriggers = trigger(
  'chat_messages',
  `if tg_op = 'UPDATE' and ${unchanged(['conversation_id', 'created_at', 'tool_name'])} then
    return null;
  end if;
  if tg_op <> 'INSERT' then
    insert into usage_message_changes (owner, day, tool_name, messages)
    values (${ownerOf('old.conversation_id')}, ${day('old')}, old.tool_name, -1);
  end if;
  if tg_op <> 'DELETE' then
    insert into usage_message_changes (owner, day, tool_name, messages)
    values (${ownerOf('new.conversation_id')}, ${day('new')}, new.tool_name, 1);
  end if;
  return null;`,
);

export const chatTurnUsageTriggers = trigger(
  'chat_turns',
  `if tg_op = 'UPDATE' and ${unchanged(['id', 'conversation_id', 'created_at', 'agent_id', (row) => `(${row}.status = 'failed')`])} then
    return null;
  end if;
  if tg_op <> 'INSERT' then
    insert into usage_turn_changes (owner, day, agent_id, turns, failed)
    values (${ownerOf('old.conversation_id')}, ${day('old')}, old.agent_id, -1, -(old.status = 'failed')::int);
  end if;
  if tg_op <> 'DELETE' then
    insert into usage_turn_changes (owner, day, agent_id, turns, failed)
    values (${ownerOf('new.conversation_id')}, ${day('new')}, new.agent_id, 1, (new.status = 'failed')::int);
  end if;
  if (tg_op = 'INSERT' and new.agent_id is not null) or (tg_op = 'DELETE' and old.agent_id is not null)
     or (tg_op = 'UPDATE' and (old.id <> new.id or old.agent_id is distinct from new.agent_id)) then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    select l.user_id, (l.created_at at time zone 'UTC')::date, m.agent_id, sum(m.sign), sum(m.sign * l.amount)
    from (values (old.id, old.agent_id, -1), (old.id, null, 1), (new.id, null, -1), (new.id, new.agent_id, 1))
           as m (workflow_id, agent_id, sign)
    join credit_ledger l on l.workflow_id = m.workflow_id and l.kind = 'settle'
    where m.workflow_id like 'chat-%'
    group by l.user_id, (l.created_at at time zone 'UTC')::date, m.agent_id
    having sum(m.sign) <> 0 or sum(m.sign * l.amount) <> 0;
  end if;
  return null;`,
);

export const creditLedgerUsageTriggers = trigger(
  'credit_ledger',
  `if tg_op = 'UPDATE' and ${unchanged(['user_id', 'kind', 'amount', 'created_at', 'workflow_id'])} then
    return null;
  end if;
  if tg_op <> 'INSERT' and old.kind = 'settle' then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    values (old.user_id, ${day('old')}, ${agentOf('old.workflow_id')}, -1, -old.amount);
  end if;
  if tg_op <> 'DELETE' and new.kind = 'settle' then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    values (new.user_id, ${day('new')}, ${agentOf('new.workflow_id')}, 1, new.amount);
  end if;
  return null;`,
);

/** The moves of a conversation's rows: off the old owner (to `''`), and onto the new one (from `''`). */
const conversationMoves = `(values (old.id, old.owner, -1), (old.id, '', 1), (new.id, '', -1), (new.id, new.owner, 1))
           as m (conversation_id, owner, sign)`;

export const chatConversationUsageTriggers = trigger(
  'chat_conversations',
  `if tg_op = 'UPDATE' and ${unchanged(['id', 'owner'])} then
    return null;
  end if;
  insert into usage_message_changes (owner, day, tool_name, messages)
  select m.owner, (x.created_at at time zone 'UTC')::date, x.tool_name, sum(m.sign)
  from ${conversationMoves}
  join chat_messages x on x.conversation_id = m.conversation_id
  group by m.owner, (x.created_at at time zone 'UTC')::date, x.tool_name
  having sum(m.sign) <> 0;
  insert into usage_turn_changes (owner, day, agent_id, turns, failed)
  select m.owner, (x.created_at at time zone 'UTC')::date, x.agent_id, sum(m.sign),
         sum(m.sign * (x.status = 'failed')::int)
  from ${conversationMoves}
  join chat_turns x on x.conversation_id = m.conversation_id
  group by m.owner, (x.created_at at time zone 'UTC')::date, x.agent_id
  having sum(m.sign) <> 0 or sum(m.sign * (x.status = 'failed')::int) <> 0;
  return null;`,
);
