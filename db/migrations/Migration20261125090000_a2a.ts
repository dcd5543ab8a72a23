import { Migration } from '@mikro-orm/migrations';

/**
 * The A2A server's stores (api/agents/routes/a2a/): tasks and push-notification configs in the exact schema of
 * `@a2a-js/sdk/server/database` (DatabaseTaskStore, DatabasePushNotificationStore; its `a2a-db` CLI renders the same
 * statements for PostgreSQL), under our own table names. The SDK reads and writes them through Kysely; they are not
 * MikroORM entities. `owner` is the calling key's user id, so another user's task id is not found.
 */
export class Migration20261125090000_a2a extends Migration {
  override name = 'Migration20261125090000_a2a';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "a2a_tasks" ("tenant" varchar(255) collate "C" not null, "owner" varchar(255) collate "C" not null, "id" varchar(36) collate "C" not null, "context_id" varchar(36) collate "C" not null, "status_last_updated" bigint not null, "status_state" varchar(255) collate "C", "status" text, "artifacts" text, "history" text, "metadata" text, "protocol_version" varchar(255), constraint "a2a_tasks_pkey" primary key ("tenant", "owner", "id"));`,
    );
    this.addSql(
      `create index "a2a_tasks_scope_updated_idx" on "a2a_tasks" ("tenant", "owner", "status_last_updated", "id");`,
    );
    this.addSql(
      `create index "a2a_tasks_scope_context_updated_idx" on "a2a_tasks" ("tenant", "owner", "context_id", "status_last_updated", "id");`,
    );
    this.addSql(
      `create table "a2a_push_configs" ("tenant" varchar(255) collate "C" not null, "owner" varchar(255) collate "C" not null, "task_id" varchar(36) collate "C" not null, "config_id" varchar(36) collate "C" not null, "config_data" text, "protocol_version" varchar(255), constraint "a2a_push_configs_pkey" primary key ("tenant", "owner", "task_id", "config_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "a2a_push_configs";`);
    this.addSql(`drop table if exists "a2a_tasks";`);
  }
}
