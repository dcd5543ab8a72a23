import { Migration } from '@mikro-orm/migrations';

export class Migration20261123104934_conversations extends Migration {
  override name = 'Migration20261123104934_conversations';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "chat_conversations" ("id" varchar(255) not null, "owner" varchar(255) not null, "turns" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "chat_messages" ("id" bigserial primary key, "conversation_id" varchar(255) not null, "session_id" varchar(255) not null, "turn" int not null, "seq" int not null, "role" varchar(255) not null, "content" text null, "tool_calls" jsonb null, "tool_call_id" varchar(255) null, "tool_name" varchar(255) null, "channel" varchar(255) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(
      `alter table "chat_messages" add constraint "chat_messages_conversation_id_turn_seq_unique" unique ("conversation_id", "turn", "seq");`,
    );

    this.addSql(
      `create table "chat_sessions" ("id" varchar(255) not null, "owner" varchar(255) not null, "key" varchar(255) not null, "channel" varchar(255) not null, "conversation_id" varchar(255) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "chat_sessions_conversation_id_index" on "chat_sessions" ("conversation_id");`);
    this.addSql(`alter table "chat_sessions" add constraint "chat_sessions_owner_key_unique" unique ("owner", "key");`);

    this.addSql(
      `create table "chat_turns" ("id" varchar(255) not null, "conversation_id" varchar(255) not null, "number" int not null, "status" varchar(255) not null default 'running', "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "chat_turns" add constraint "chat_turns_conversation_id_number_unique" unique ("conversation_id", "number");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "chat_conversations" cascade;`);
    this.addSql(`drop table if exists "chat_messages" cascade;`);
    this.addSql(`drop table if exists "chat_sessions" cascade;`);
    this.addSql(`drop table if exists "chat_turns" cascade;`);
  }
}
