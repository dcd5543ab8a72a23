import { Migration } from '@mikro-orm/migrations';

export class Migration20261126090000_media_jobs extends Migration {
  override name = 'Migration20261126090000_media_jobs';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "media_jobs" ("id" varchar(255) not null, "kind" varchar(255) not null, "user_id" varchar(255) not null, "status" varchar(255) not null, "engine" varchar(255) null, "request" jsonb not null, "result" jsonb null, "credits" int not null, "error" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "media_jobs_user_id_index" on "media_jobs" ("user_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "media_jobs" cascade;`);
  }
}
