import { Migration } from '@mikro-orm/migrations';

/**
 * The operator console's audit log (issue 30): `admin_audit`, append-only (its triggers refuse UPDATE, DELETE and
 * TRUNCATE: db/entities/admin-audit.entity.ts), with one user's entries by (target_user_id, id); and the user search's
 * indexes: the address in the "C" collation (a prefix is a range of it in byte order, whatever the database's
 * collation) and (created_at, id) for everyone newest first.
 */
export class Migration20261206090000_admin_audit extends Migration {
  override name = 'Migration20261206090000_admin_audit';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "admin_audit" ("id" bigserial primary key, "at" timestamptz not null default now(), "actor" varchar(255) not null, "actor_email" varchar(255) null, "action" varchar(255) not null, "target_user_id" varchar(255) null, "reason" text null, "details" jsonb not null, "request_id" varchar(255) null);`,
    );
    this.addSql(`create index "admin_audit_target_user_id_id_index" on "admin_audit" ("target_user_id", "id");`);

    this.addSql(`create index "users_email_prefix_index" on "users" ("email" collate "C");`);
    this.addSql(`create index "users_created_at_id_index" on "users" ("created_at", "id");`);

    this.addSql(
      `create or replace function "admin_audit_admin_audit_append_only_fn"() returns trigger as $$ begin raise exception 'admin_audit is append-only: % refused', tg_op using errcode = 'insufficient_privilege'; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "admin_audit_append_only" BEFORE UPDATE OR DELETE on "admin_audit" for each ROW execute function "admin_audit_admin_audit_append_only_fn"();`,
    );
    // By hand: TRUNCATE bypasses row triggers, and this statement trigger is not in the entity (MikroORM's schema
    // reading does not see TRUNCATE triggers, so declared there it would read as drift forever).
    this.addSql(
      `create or replace function "admin_audit_admin_audit_no_truncate_fn"() returns trigger as $$ begin raise exception 'admin_audit is append-only: TRUNCATE refused' using errcode = 'insufficient_privilege'; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "admin_audit_no_truncate" BEFORE TRUNCATE on "admin_audit" for each STATEMENT execute function "admin_audit_admin_audit_no_truncate_fn"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "admin_audit_append_only" on "admin_audit";`);
    this.addSql(`drop function if exists "admin_audit_admin_audit_append_only_fn"();`);
    this.addSql(`drop trigger if exists "admin_audit_no_truncate" on "admin_audit";`);
    this.addSql(`drop function if exists "admin_audit_admin_audit_no_truncate_fn"();`);
    this.addSql(`drop table if exists "admin_audit" cascade;`);

    this.addSql(`drop index "users_email_prefix_index";`);
    this.addSql(`drop index "users_created_at_id_index";`);
  }
}
