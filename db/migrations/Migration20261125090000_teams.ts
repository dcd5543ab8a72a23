import { Migration } from '@mikro-orm/migrations';

export class Migration20261125090000_teams extends Migration {
  override name = 'Migration20261125090000_teams';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "teams" ("id" varchar(255) not null, "name" varchar(255) not null, "created_by" varchar(255) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "team_members" ("team_id" varchar(255) not null, "user_id" varchar(255) not null, "role" varchar(255) not null, "joined_at" timestamptz not null, primary key ("team_id", "user_id"));`,
    );
    this.addSql(`create index "team_members_user_id_index" on "team_members" ("user_id");`);

    this.addSql(
      `create table "team_invitations" ("id" varchar(255) not null, "team_id" varchar(255) not null, "email" varchar(255) not null, "role" varchar(255) not null, "token_hash" varchar(255) not null, "invited_by" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, "accepted_by" varchar(255) null, primary key ("id"));`,
    );
    this.addSql(`create index "team_invitations_team_id_index" on "team_invitations" ("team_id");`);
    this.addSql(
      `alter table "team_invitations" add constraint "team_invitations_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `create table "team_broadcasts" ("id" varchar(255) not null, "team_id" varchar(255) not null, "sender_id" varchar(255) not null, "message" text not null, "status" varchar(255) not null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "team_broadcasts_team_id_index" on "team_broadcasts" ("team_id");`);

    this.addSql(
      `create table "team_broadcast_deliveries" ("broadcast_id" varchar(255) not null, "user_id" varchar(255) not null, "status" varchar(255) not null, "session_delivered_at" timestamptz null, "channels" jsonb not null, "delivered_at" timestamptz null, "error" text null, primary key ("broadcast_id", "user_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "team_broadcast_deliveries" cascade;`);
    this.addSql(`drop table if exists "team_broadcasts" cascade;`);
    this.addSql(`drop table if exists "team_invitations" cascade;`);
    this.addSql(`drop table if exists "team_members" cascade;`);
    this.addSql(`drop table if exists "teams" cascade;`);
  }
}
