import { Migration } from '@mikro-orm/migrations';

/**
 * The dashboard's usage figures, kept by PostgreSQL (api/services/dashboard/service.ts; the triggers' definitions and
 * what they count: db/entities/usage-triggers.ts). Tables written by hand, not generated: no entity maps them (db/orm.ts,
 * `skipTables`); the triggers were generated from the entities.
 *
 * - `usage_message_days` (owner, day, tool_name: messages), `usage_turn_days` (owner, day, agent_id: turns, failed),
 *   `usage_credit_days` (user_id, day, agent_id: settlements, credits): one row per key, `nulls not distinct` (a null
 *   tool or agent is a key of its own), indexed by key for a caller's figures and by day for the platform's. Folded
 *   into by the API process only (api/services/dashboard/usage-fold.ts).
 * - `usage_*_changes`: the same columns without a key or an index: the triggers' signed changes, appended in the
 *   writers' transactions, until folded.
 * - The triggers on `chat_conversations`, `chat_messages`, `chat_turns` and `credit_ledger`.
 * - The backfill: the days tables computed from the rows already there, after the triggers exist. Creating a trigger
 *   locks its table against writes until this migration commits, so a row is either in the backfill (written
 *   before) or counted by a trigger (after), never both nor neither.
 * - Dropped: the indexes that served the dashboard's aggregates over the rows, which nothing else reads
 *   (`chat_messages` by conversation or by time with role and tool, `credit_ledger` by kind and time): two fewer
 *   index entries for every message written, one for every ledger entry.
 */
export class Migration20261202090000_usage_rollups extends Migration {
  override name = 'Migration20261202090000_usage_rollups';

  override up(): void | Promise<void> {
    // The days table (its key, and its day for the platform's figures) and the changes table of the same columns.
    const days = (table: string, key: string, columns: string) => {
      this.addSql(`create table "${table}_days" (${columns},
        constraint "${table}_days_key" unique nulls not distinct (${key}));`);
      this.addSql(`create index "${table}_days_day_index" on "${table}_days" ("day");`);
      this.addSql(`create table "${table}_changes" (${columns});`);
    };
    days(
      'usage_message',
      '"owner", "day", "tool_name"',
      `"owner" text not null, "day" date not null, "tool_name" text null, "messages" int not null`,
    );
    days(
      'usage_turn',
      '"owner", "day", "agent_id"',
      `"owner" text not null, "day" date not null, "agent_id" text null, "turns" int not null, "failed" int not null`,
    );
    days(
      'usage_credit',
      '"user_id", "day", "agent_id"',
      `"user_id" text not null, "day" date not null, "agent_id" text null, "settlements" int not null,
       "credits" bigint not null`,
    );

    this
      .addSql(`create or replace function "chat_conversations_chat_conversations_usage_fn"() returns trigger as $$ begin if tg_op = 'UPDATE' and old.id is not distinct from new.id and old.owner is not distinct from new.owner then
    return null;   end if;   insert into usage_message_changes (owner, day, tool_name, messages)
  select m.owner, (x.created_at at time zone 'UTC')::date, x.tool_name, sum(m.sign)
  from (values (old.id, old.owner, -1), (old.id, '', 1), (new.id, '', -1), (new.id, new.owner, 1))
           as m (conversation_id, owner, sign)
  join chat_messages x on x.conversation_id = m.conversation_id
  group by m.owner, (x.created_at at time zone 'UTC')::date, x.tool_name
  having sum(m.sign) <> 0;   insert into usage_turn_changes (owner, day, agent_id, turns, failed)
  select m.owner, (x.created_at at time zone 'UTC')::date, x.agent_id, sum(m.sign),
         sum(m.sign * (x.status = 'failed')::int)
  from (values (old.id, old.owner, -1), (old.id, '', 1), (new.id, '', -1), (new.id, new.owner, 1))
           as m (conversation_id, owner, sign)
  join chat_turns x on x.conversation_id = m.conversation_id
  group by m.owner, (x.created_at at time zone 'UTC')::date, x.agent_id
  having sum(m.sign) <> 0 or sum(m.sign * (x.status = 'failed')::int) <> 0;   return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "chat_conversations_usage" AFTER INSERT OR UPDATE OR DELETE on "chat_conversations" for each ROW execute function "chat_conversations_chat_conversations_usage_fn"();`,
    );

    this.addSql(`drop index "chat_messages_conversation_id_created_at_role_tool_name_index";`);
    this.addSql(`drop index "chat_messages_created_at_role_tool_name_index";`);
    this
      .addSql(`create or replace function "chat_messages_chat_messages_usage_fn"() returns trigger as $$ begin if tg_op = 'UPDATE' and old.conversation_id is not distinct from new.conversation_id and old.created_at is not distinct from new.created_at and old.tool_name is not distinct from new.tool_name then
    return null;   end if;   if tg_op <> 'INSERT' then
    insert into usage_message_changes (owner, day, tool_name, messages)
    values (coalesce((select c.owner from chat_conversations c where c.id = old.conversation_id), ''), (old.created_at at time zone 'UTC')::date, old.tool_name, -1);   end if;   if tg_op <> 'DELETE' then
    insert into usage_message_changes (owner, day, tool_name, messages)
    values (coalesce((select c.owner from chat_conversations c where c.id = new.conversation_id), ''), (new.created_at at time zone 'UTC')::date, new.tool_name, 1);   end if;   return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "chat_messages_usage" AFTER INSERT OR UPDATE OR DELETE on "chat_messages" for each ROW execute function "chat_messages_chat_messages_usage_fn"();`,
    );

    this
      .addSql(`create or replace function "chat_turns_chat_turns_usage_fn"() returns trigger as $$ begin if tg_op = 'UPDATE' and old.id is not distinct from new.id and old.conversation_id is not distinct from new.conversation_id and old.created_at is not distinct from new.created_at and old.agent_id is not distinct from new.agent_id and (old.status = 'failed') is not distinct from (new.status = 'failed') then
    return null;   end if;   if tg_op <> 'INSERT' then
    insert into usage_turn_changes (owner, day, agent_id, turns, failed)
    values (coalesce((select c.owner from chat_conversations c where c.id = old.conversation_id), ''), (old.created_at at time zone 'UTC')::date, old.agent_id, -1, -(old.status = 'failed')::int);   end if;   if tg_op <> 'DELETE' then
    insert into usage_turn_changes (owner, day, agent_id, turns, failed)
    values (coalesce((select c.owner from chat_conversations c where c.id = new.conversation_id), ''), (new.created_at at time zone 'UTC')::date, new.agent_id, 1, (new.status = 'failed')::int);   end if;   if (tg_op = 'INSERT' and new.agent_id is not null) or (tg_op = 'DELETE' and old.agent_id is not null)
     or (tg_op = 'UPDATE' and (old.id <> new.id or old.agent_id is distinct from new.agent_id)) then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    select l.user_id, (l.created_at at time zone 'UTC')::date, m.agent_id, sum(m.sign), sum(m.sign * l.amount)
    from (values (old.id, old.agent_id, -1), (old.id, null, 1), (new.id, null, -1), (new.id, new.agent_id, 1))
           as m (workflow_id, agent_id, sign)
    join credit_ledger l on l.workflow_id = m.workflow_id and l.kind = 'settle'
    where m.workflow_id like 'chat-%'
    group by l.user_id, (l.created_at at time zone 'UTC')::date, m.agent_id
    having sum(m.sign) <> 0 or sum(m.sign * l.amount) <> 0;   end if;   return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "chat_turns_usage" AFTER INSERT OR UPDATE OR DELETE on "chat_turns" for each ROW execute function "chat_turns_chat_turns_usage_fn"();`,
    );

    this.addSql(`drop index "credit_ledger_kind_created_at_amount_workflow_id_index";`);
    this
      .addSql(`create or replace function "credit_ledger_credit_ledger_usage_fn"() returns trigger as $$ begin if tg_op = 'UPDATE' and old.user_id is not distinct from new.user_id and old.kind is not distinct from new.kind and old.amount is not distinct from new.amount and old.created_at is not distinct from new.created_at and old.workflow_id is not distinct from new.workflow_id then
    return null;   end if;   if tg_op <> 'INSERT' and old.kind = 'settle' then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    values (old.user_id, (old.created_at at time zone 'UTC')::date, (select t.agent_id from chat_turns t where old.workflow_id like 'chat-%' and t.id = old.workflow_id), -1, -old.amount);   end if;   if tg_op <> 'DELETE' and new.kind = 'settle' then
    insert into usage_credit_changes (user_id, day, agent_id, settlements, credits)
    values (new.user_id, (new.created_at at time zone 'UTC')::date, (select t.agent_id from chat_turns t where new.workflow_id like 'chat-%' and t.id = new.workflow_id), 1, new.amount);   end if;   return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "credit_ledger_usage" AFTER INSERT OR UPDATE OR DELETE on "credit_ledger" for each ROW execute function "credit_ledger_credit_ledger_usage_fn"();`,
    );

    // The rows already there, counted as the triggers count them.
    this.addSql(`insert into "usage_message_days" ("owner", "day", "tool_name", "messages")
      select coalesce(c."owner", ''), (m."created_at" at time zone 'UTC')::date, m."tool_name", count(*)
      from "chat_messages" m left join "chat_conversations" c on c."id" = m."conversation_id"
      group by 1, 2, 3;`);
    this.addSql(`insert into "usage_turn_days" ("owner", "day", "agent_id", "turns", "failed")
      select coalesce(c."owner", ''), (t."created_at" at time zone 'UTC')::date, t."agent_id", count(*),
             count(*) filter (where t."status" = 'failed')
      from "chat_turns" t left join "chat_conversations" c on c."id" = t."conversation_id"
      group by 1, 2, 3;`);
    this.addSql(`insert into "usage_credit_days" ("user_id", "day", "agent_id", "settlements", "credits")
      select l."user_id", (l."created_at" at time zone 'UTC')::date, t."agent_id", count(*), sum(l."amount")
      from "credit_ledger" l left join "chat_turns" t on l."workflow_id" like 'chat-%' and t."id" = l."workflow_id"
      where l."kind" = 'settle'
      group by 1, 2, 3;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "chat_conversations_usage" on "chat_conversations";`);
    this.addSql(`drop function if exists "chat_conversations_chat_conversations_usage_fn"();`);

    this.addSql(`drop trigger if exists "chat_messages_usage" on "chat_messages";`);
    this.addSql(`drop function if exists "chat_messages_chat_messages_usage_fn"();`);
    this.addSql(
      `create index "chat_messages_conversation_id_created_at_role_tool_name_index" on "chat_messages" ("conversation_id", "created_at", "role", "tool_name");`,
    );
    this.addSql(
      `create index "chat_messages_created_at_role_tool_name_index" on "chat_messages" ("created_at", "role", "tool_name");`,
    );

    this.addSql(`drop trigger if exists "chat_turns_usage" on "chat_turns";`);
    this.addSql(`drop function if exists "chat_turns_chat_turns_usage_fn"();`);

    this.addSql(`drop trigger if exists "credit_ledger_usage" on "credit_ledger";`);
    this.addSql(`drop function if exists "credit_ledger_credit_ledger_usage_fn"();`);
    this.addSql(
      `create index "credit_ledger_kind_created_at_amount_workflow_id_index" on "credit_ledger" ("kind", "created_at", "amount", "workflow_id");`,
    );

    for (const table of ['usage_message', 'usage_turn', 'usage_credit']) {
      this.addSql(`drop table if exists "${table}_changes";`);
      this.addSql(`drop table if exists "${table}_days";`);
    }
  }
}
