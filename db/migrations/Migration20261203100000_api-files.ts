import { Migration } from '@mikro-orm/migrations';

/** The gateway's Files API (db/entities/api-file.entity.ts): JSONL files of requests, owner-only. */
export class Migration20261203100000_api_files extends Migration {
  override name = 'Migration20261203100000_api_files';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "api_files" ("id" varchar(255) not null, "user_id" varchar(255) not null, "purpose" varchar(255) not null, "filename" varchar(255) not null, "bytes" bigint not null, "line_count" int not null, "storage_key" varchar(255) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "api_files_user_id_created_at_index" on "api_files" ("user_id", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "api_files" cascade;`);
  }
}
