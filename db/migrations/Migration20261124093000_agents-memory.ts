import { Migration } from '@mikro-orm/migrations';

export class Migration20261124093000_agents_memory extends Migration {
  override name = 'Migration20261124093000_agents_memory';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "custom_agents" ("id" varchar(255) not null, "user_id" varchar(255) not null, "forked_from" varchar(255) null, "name" varchar(255) not null, "description" text not null, "system_prompt" text not null, "model" varchar(255) not null, "tools" jsonb not null, "routing" jsonb not null, "temperature" double precision null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "custom_agents_user_id_index" on "custom_agents" ("user_id");`);

    this.addSql(
      `create table "agent_model_choices" ("user_id" varchar(255) not null, "agent_id" varchar(255) not null, "model" varchar(255) not null, primary key ("user_id", "agent_id"));`,
    );

    this.addSql(
      `create table "memories" ("id" varchar(255) not null, "user_id" varchar(255) not null, "content" text not null, "content_hash" varchar(255) not null, "importance" double precision not null, "source" varchar(255) not null, "created_at" timestamptz not null, "search" tsvector generated always as (to_tsvector('english', content)) stored null, primary key ("id"));`,
    );
    this.addSql(
      `create index "memories_user_id_importance_index" on "memories" ("user_id", "importance", "created_at");`,
    );
    this.addSql(`create index "memories_search_index" on "public"."memories" using gin("search");`);
    this.addSql(
      `alter table "memories" add constraint "memories_user_id_content_hash_unique" unique ("user_id", "content_hash");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "memories" cascade;`);
    this.addSql(`drop table if exists "agent_model_choices" cascade;`);
    this.addSql(`drop table if exists "custom_agents" cascade;`);
  }
}
