import { Migration } from '@mikro-orm/migrations';

/**
 * Media job callbacks and listing: each job may carry a `callback_url` (with its delivery's status, attempts, time
 * and last error); each account has one signing secret (`media_callback_secrets`, created on first use, rotated on
 * request, the previous secret kept to sign alongside for a grace period); `GET /api/v1/media/jobs` pages a user's
 * jobs newest first by (created_at, id).
 */
export class Migration20261126100000_media_callbacks extends Migration {
  override name = 'Migration20261126100000_media_callbacks';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "media_jobs" add column "callback_url" text null, add column "callback_status" varchar(255) null, add column "callback_attempts" int not null default 0, add column "callback_delivered_at" timestamptz null, add column "callback_error" text null;`,
    );
    this.addSql(
      `create index "media_jobs_user_id_created_at_id_index" on "media_jobs" ("user_id", "created_at", "id");`,
    );
    this.addSql(
      `create table "media_callback_secrets" ("user_id" varchar(255) not null, "secret" varchar(255) not null, "previous_secret" varchar(255) null, "rotated_at" timestamptz null, "created_at" timestamptz not null, primary key ("user_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "media_callback_secrets" cascade;`);
    this.addSql(`drop index if exists "media_jobs_user_id_created_at_id_index";`);
    this.addSql(
      `alter table "media_jobs" drop column "callback_url", drop column "callback_status", drop column "callback_attempts", drop column "callback_delivered_at", drop column "callback_error";`,
    );
  }
}
