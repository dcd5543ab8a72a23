import { Migration } from '@mikro-orm/migrations';

export class Migration20261128100000_uploads extends Migration {
  override name = 'Migration20261128100000_uploads';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "uploads" ("id" varchar(255) not null, "user_id" varchar(255) not null, "file_name" varchar(255) not null, "kind" varchar(255) not null, "content_type" varchar(255) not null, "bytes" bigint not null, "sha256" varchar(255) not null, "storage_key" varchar(255) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "uploads_user_id_created_at_index" on "uploads" ("user_id", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "uploads" cascade;`);
  }
}
