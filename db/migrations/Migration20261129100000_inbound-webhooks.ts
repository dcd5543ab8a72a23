import { Migration } from '@mikro-orm/migrations';

/**
 * Inbound webhooks (docs/webhooks.md): `inbound_webhooks`, what owners configured (a Standard Webhooks
 * receiver of an agent, or a GitHub repository mapped to an agent; secrets and tokens encrypted), and `webhook_runs`,
 * one row per accepted delivery, whose id is its run's workflow id (db/entities/inbound-webhook.entity.ts).
 */
export class Migration20261129100000_inbound_webhooks extends Migration {
  override name = 'Migration20261129100000_inbound-webhooks';

  override up(): void {
    this.addSql(
      `create table "inbound_webhooks" ("id" varchar(255) not null, "user_id" varchar(255) not null, "source" varchar(255) not null, "agent_id" varchar(255) not null, "repository" varchar(255) null, "secret" text not null, "previous_secret" text null, "rotated_at" timestamptz null, "github_token" text null, "comment_without_approval" boolean not null, "forward_to_messengers" boolean not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "inbound_webhooks_user_id_created_at_index" on "inbound_webhooks" ("user_id", "created_at");`,
    );
    this.addSql(
      `alter table "inbound_webhooks" add constraint "inbound_webhooks_user_id_repository_unique" unique ("user_id", "repository");`,
    );
    this.addSql(
      `create table "webhook_runs" ("id" varchar(255) not null, "user_id" varchar(255) null, "source" varchar(255) not null, "webhook_id" varchar(255) null, "agent_id" varchar(255) null, "delivery_id" varchar(255) not null, "session_key" varchar(255) not null, "message" text not null, "options" jsonb not null, "callback_url" text null, "callback_wanted" boolean not null, "callback_status" varchar(255) null, "callback_attempts" int not null, "callback_error" text null, "status" varchar(255) not null, "turn_id" varchar(255) null, "answer" text null, "error" text null, "created_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "webhook_runs_user_id_created_at_index" on "webhook_runs" ("user_id", "created_at");`);
  }

  override down(): void {
    this.addSql(`drop table if exists "webhook_runs" cascade;`);
    this.addSql(`drop table if exists "inbound_webhooks" cascade;`);
  }
}
