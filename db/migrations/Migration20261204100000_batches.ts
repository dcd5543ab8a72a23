import { Migration } from '@mikro-orm/migrations';

/** The gateway's Batch API (db/entities/batch.entity.ts): batches and their lines, owner-only. */
export class Migration20261204100000_batches extends Migration {
  override name = 'Migration20261204100000_batches';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "batches" ("id" varchar(255) not null, "user_id" varchar(255) not null, "endpoint" varchar(255) not null, "input_file_id" varchar(255) not null, "completion_window" varchar(255) not null, "status" varchar(255) not null, "metered" boolean not null, "metadata" jsonb null, "errors" jsonb null, "output_file_id" varchar(255) null, "error_file_id" varchar(255) null, "total" int not null default 0, "completed" int not null default 0, "failed" int not null default 0, "input_tokens" bigint not null default '0', "output_tokens" bigint not null default '0', "created_at" timestamptz not null, "expires_at" timestamptz not null, "in_progress_at" timestamptz null, "finalizing_at" timestamptz null, "completed_at" timestamptz null, "failed_at" timestamptz null, "expired_at" timestamptz null, "cancelling_at" timestamptz null, "cancelled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "batches_user_id_created_at_index" on "batches" ("user_id", "created_at");`);

    this.addSql(
      `create table "batch_lines" ("batch_id" varchar(255) not null, "line" int not null, "custom_id" text not null, "body" jsonb not null, "status_code" int null, "request_id" varchar(255) null, "response" jsonb null, "done_at" timestamptz null, primary key ("batch_id", "line"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "batches" cascade;`);
    this.addSql(`drop table if exists "batch_lines" cascade;`);
  }
}
