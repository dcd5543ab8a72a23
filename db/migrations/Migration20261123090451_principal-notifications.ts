import { Migration } from '@mikro-orm/migrations';

export class Migration20261123090451_principal_notifications extends Migration {
  override name = 'Migration20261123090451_principal_notifications';

  override up(): void | Promise<void> {
    this
      .addSql(`create or replace function "users_users_principal_updated_fn"() returns trigger as $$ begin if old.plan is distinct from new.plan or old.custom_limits is distinct from new.custom_limits then
        perform pg_notify('tessera_principals', old.id);       end if;       return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "users_principal_updated" AFTER UPDATE on "users" for each ROW execute function "users_users_principal_updated_fn"();`,
    );
    this.addSql(
      `create or replace function "users_users_principal_deleted_fn"() returns trigger as $$ begin perform pg_notify('tessera_principals', old.id); return null; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "users_principal_deleted" AFTER DELETE on "users" for each ROW execute function "users_users_principal_deleted_fn"();`,
    );

    this
      .addSql(`create or replace function "api_keys_api_keys_principal_updated_fn"() returns trigger as $$ begin if old.revoked_at is distinct from new.revoked_at or old.user_id is distinct from new.user_id then
        perform pg_notify('tessera_principals', old.user_id);       end if;       return null; end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "api_keys_principal_updated" AFTER UPDATE on "api_keys" for each ROW execute function "api_keys_api_keys_principal_updated_fn"();`,
    );
    this.addSql(
      `create or replace function "api_keys_api_keys_principal_deleted_fn"() returns trigger as $$ begin perform pg_notify('tessera_principals', old.user_id); return null; end; $$ language plpgsql;`,
    );
    this.addSql(
      `create trigger "api_keys_principal_deleted" AFTER DELETE on "api_keys" for each ROW execute function "api_keys_api_keys_principal_deleted_fn"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "api_keys_principal_updated" on "api_keys";`);
    this.addSql(`drop function if exists "api_keys_api_keys_principal_updated_fn"();`);
    this.addSql(`drop trigger if exists "api_keys_principal_deleted" on "api_keys";`);
    this.addSql(`drop function if exists "api_keys_api_keys_principal_deleted_fn"();`);

    this.addSql(`drop trigger if exists "users_principal_updated" on "users";`);
    this.addSql(`drop function if exists "users_users_principal_updated_fn"();`);
    this.addSql(`drop trigger if exists "users_principal_deleted" on "users";`);
    this.addSql(`drop function if exists "users_users_principal_deleted_fn"();`);
  }
}
