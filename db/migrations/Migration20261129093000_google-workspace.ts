import { Migration } from '@mikro-orm/migrations';

export class Migration20261129093000_google_workspace extends Migration {
  override name = 'Migration20261129093000_google-workspace';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "oauth_identities" add column "access_token_encrypted" text null, add column "access_token_expires_at" timestamptz null, add column "revoked_at" timestamptz null;`,
    );
    this.addSql(
      `create table "workspace_writes" ("call_key" varchar(255) not null, "user_id" varchar(255) not null, "tool" varchar(255) not null, "result" jsonb null, "claimed_at" timestamptz not null, "done_at" timestamptz null, primary key ("call_key"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "workspace_writes" cascade;`);
    this.addSql(
      `alter table "oauth_identities" drop column "access_token_encrypted", drop column "access_token_expires_at", drop column "revoked_at";`,
    );
  }
}
