import { Migration } from '@mikro-orm/migrations';

export class Migration20261125090000_published_sites extends Migration {
  override name = 'Migration20261125090000_published_sites';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "published_sites" ("subdomain" varchar(255) not null, "user_id" varchar(255) not null, "title" varchar(255) not null, "html" text not null, "etag" varchar(255) not null, "publish_key" varchar(255) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("subdomain"));`,
    );
    this.addSql(`create index "published_sites_user_id_index" on "published_sites" ("user_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "published_sites" cascade;`);
  }
}
