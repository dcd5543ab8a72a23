import { Migration } from '@mikro-orm/migrations';

export class Migration20261123120036_messenger_channels extends Migration {
  override name = 'Migration20261123120036_messenger_channels';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "chat_link_codes" ("code_hash" varchar(255) not null, "session_id" varchar(255) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, primary key ("code_hash"));`,
    );
    this.addSql(
      `alter table "chat_link_codes" add constraint "chat_link_codes_session_id_unique" unique ("session_id");`,
    );

    this.addSql(
      `create table "messenger_events" ("id" varchar(255) not null, "input" jsonb null, "started" boolean not null default false, "replied_parts" int not null default 0, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "messenger_events_created_at_index" on "messenger_events" ("created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "chat_link_codes" cascade;`);
    this.addSql(`drop table if exists "messenger_events" cascade;`);
  }
}
