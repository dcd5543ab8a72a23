import { Migration } from '@mikro-orm/migrations';

/** Agent service logins: magic-link tokens, web sessions, OAuth identities and logins in flight, sent mail. */
export class Migration20261124090000_logins extends Migration {
  override name = 'Migration20261124090000_logins';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "login_tokens" ("token_hash" varchar(255) not null, "email" varchar(255) not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("token_hash"));`,
    );
    this.addSql(`create index "login_tokens_expires_at_index" on "login_tokens" ("expires_at");`);

    this.addSql(
      `create table "web_sessions" ("id" varchar(255) not null, "token_hash" varchar(255) not null, "user_id" varchar(255) not null, "method" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "web_sessions" add constraint "web_sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "web_sessions_user_id_index" on "web_sessions" ("user_id");`);

    this.addSql(
      `create table "oauth_identities" ("id" varchar(255) not null, "user_id" varchar(255) not null, "provider" varchar(255) not null, "subject" varchar(255) not null, "email" varchar(255) not null, "scopes" jsonb not null, "refresh_token_encrypted" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "oauth_identities_user_id_index" on "oauth_identities" ("user_id");`);
    this.addSql(
      `alter table "oauth_identities" add constraint "oauth_identities_provider_subject_unique" unique ("provider", "subject");`,
    );

    this.addSql(
      `create table "oauth_login_states" ("state_hash" varchar(255) not null, "provider" varchar(255) not null, "nonce" varchar(255) not null, "code_verifier" varchar(255) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, primary key ("state_hash"));`,
    );
    this.addSql(`create index "oauth_login_states_expires_at_index" on "oauth_login_states" ("expires_at");`);

    this.addSql(
      `create table "sent_mails" ("idempotency_key" varchar(255) not null, "message_id" varchar(255) not null, "recipient" varchar(255) not null, "subject" text not null, "transport" varchar(255) not null, "claimed_at" timestamptz not null, "sent_at" timestamptz null, primary key ("idempotency_key"));`,
    );

    this.addSql(
      `alter table "web_sessions" add constraint "web_sessions_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
    this.addSql(
      `alter table "oauth_identities" add constraint "oauth_identities_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "login_tokens" cascade;`);
    this.addSql(`drop table if exists "web_sessions" cascade;`);
    this.addSql(`drop table if exists "oauth_identities" cascade;`);
    this.addSql(`drop table if exists "oauth_login_states" cascade;`);
    this.addSql(`drop table if exists "sent_mails" cascade;`);
  }
}
