import { Migration } from '@mikro-orm/migrations';

export class Migration20261125090000_schedule_tasks extends Migration {
  override name = 'Migration20261125090000_schedule_tasks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "schedule_tasks" ("id" varchar(255) not null, "user_id" varchar(255) not null, "agent_id" varchar(255) not null, "message" text not null, "cron" varchar(255) not null, "timezone" varchar(255) not null, "enabled" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "last_run_at" timestamptz null, "last_run_status" varchar(255) null, "last_turn_id" varchar(255) null, "last_error" text null, primary key ("id"));`,
    );
    this.addSql(`create index "schedule_tasks_user_id_index" on "schedule_tasks" ("user_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "schedule_tasks" cascade;`);
  }
}
