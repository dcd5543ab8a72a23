import { Migration } from '@mikro-orm/migrations';

/**
 * The operator console's people (issue 20): `users.role`, `user` or `admin`. An admin's logged-in browser may open
 * `/admin` (api/services/admin/operators.ts); the role is granted from a shell (`npm run admin -- grant-admin`).
 */
export class Migration20261201090000_admin_role extends Migration {
  override name = 'Migration20261201090000_admin_role';

  override up(): void | Promise<void> {
    this.addSql(`alter table "users" add "role" varchar(255) not null default 'user';`);
    this.addSql(`alter table "users" add constraint "users_role_known" check (role in ('user', 'admin'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "users" drop constraint "users_role_known";`);
    this.addSql(`alter table "users" drop column "role";`);
  }
}
