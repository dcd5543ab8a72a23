import { Migration } from '@mikro-orm/migrations';

export class Migration20261128110000_table_imports extends Migration {
  override name = 'Migration20261128110000_table-imports';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "table_imports" ("id" varchar(255) not null, "user_id" varchar(255) not null, "file_id" varchar(255) not null, "file_name" varchar(255) not null, "table_name" varchar(255) not null, "replace" boolean not null, "status" varchar(255) not null, "rows_read" bigint not null, "result" jsonb null, "error" text null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "table_imports_user_id_created_at_index" on "table_imports" ("user_id", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "table_imports" cascade;`);
  }
}
