import { Migration } from '@mikro-orm/migrations';

export class Migration20261129110000_agent_service_sharing_dashboard extends Migration {
  override name = 'Migration20261129110000_agent_service_sharing_dashboard';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "conversation_shares" ("id" varchar(255) not null, "token_hash" varchar(255) not null, "owner" varchar(255) not null, "session_id" varchar(255) not null, "last_message_id" bigint not null, "created_at" timestamptz not null, "expires_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "conversation_shares" add constraint "conversation_shares_token_hash_unique" unique ("token_hash");`,
    );
    this.addSql(`create index "conversation_shares_session_id_index" on "conversation_shares" ("session_id");`);

    this.addSql(`create index "chat_conversations_owner_index" on "chat_conversations" ("owner");`);

    this.addSql(
      `create index "chat_messages_conversation_id_created_at_role_tool_name_index" on "chat_messages" ("conversation_id", "created_at", "role", "tool_name");`,
    );
    this.addSql(
      `create index "chat_messages_created_at_role_tool_name_index" on "chat_messages" ("created_at", "role", "tool_name");`,
    );

    this.addSql(
      `alter table "chat_turns" add "agent_id" varchar(255) null, add "approval_expires_at" timestamptz null;`,
    );
    // Turns from before: their agent is the one named on their assistant messages.
    this.addSql(`update "chat_turns" t set "agent_id" = m."agent_id"
      from (select distinct on ("conversation_id", "turn") "conversation_id", "turn", "agent_id" from "chat_messages"
            where "agent_id" is not null order by "conversation_id", "turn", "seq") m
      where m."conversation_id" = t."conversation_id" and m."turn" = t."number";`);
    this.addSql(
      `create index "chat_turns_conversation_id_created_at_agent_id_status_index" on "chat_turns" ("conversation_id", "created_at", "agent_id", "status");`,
    );
    this.addSql(
      `create index "chat_turns_created_at_agent_id_status_index" on "chat_turns" ("created_at", "agent_id", "status");`,
    );
    this.addSql(`create index "chat_turns_approval_expires_at_index" on "chat_turns" ("approval_expires_at");`);

    this.addSql(
      `create index "credit_ledger_user_id_kind_created_at_amount_workflow_id_index" on "credit_ledger" ("user_id", "kind", "created_at", "amount", "workflow_id");`,
    );
    this.addSql(
      `create index "credit_ledger_kind_created_at_amount_workflow_id_index" on "credit_ledger" ("kind", "created_at", "amount", "workflow_id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "conversation_shares" cascade;`);

    this.addSql(`drop index "chat_conversations_owner_index";`);

    this.addSql(`drop index "chat_messages_conversation_id_created_at_role_tool_name_index";`);
    this.addSql(`drop index "chat_messages_created_at_role_tool_name_index";`);

    this.addSql(`drop index "chat_turns_conversation_id_created_at_agent_id_status_index";`);
    this.addSql(`drop index "chat_turns_created_at_agent_id_status_index";`);
    this.addSql(`drop index "chat_turns_approval_expires_at_index";`);
    this.addSql(`alter table "chat_turns" drop column "agent_id", drop column "approval_expires_at";`);

    this.addSql(`drop index "credit_ledger_user_id_kind_created_at_amount_workflow_id_index";`);
    this.addSql(`drop index "credit_ledger_kind_created_at_amount_workflow_id_index";`);
  }
}
