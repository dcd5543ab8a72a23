import { Migration } from '@mikro-orm/migrations';

export class Migration20261121100451_initial extends Migration {
  override name = 'Migration20261121100451_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "provider_breakers" ("provider" varchar(255) not null, "state" varchar(255) not null default 'closed', "consecutive_failures" int not null default 0, "opened_at" timestamptz null, "probe_started_at" timestamptz null, "last_error" text null, "updated_at" timestamptz not null, primary key ("provider"));`,
    );

    this.addSql(
      `create table "stream_chunks" ("request_id" varchar(255) not null, "seq" int not null, "data" text not null, "created_at" timestamptz not null, primary key ("request_id", "seq"));`,
    );

    this.addSql(
      `create table "users" ("id" varchar(255) not null, "email" varchar(255) null, "plan" varchar(255) not null default 'free', "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(
      `create table "api_keys" ("id" varchar(255) not null, "user_id" varchar(255) not null, "name" varchar(255) null, "secret_hash" varchar(255) not null, "preview" varchar(255) not null, "created_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "api_keys_user_id_index" on "api_keys" ("user_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);

    this.addSql(
      `alter table "api_keys" add constraint "api_keys_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
  }
}
