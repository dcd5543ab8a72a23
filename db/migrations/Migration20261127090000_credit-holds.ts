import { Migration } from '@mikro-orm/migrations';

/**
 * `credit_holds`: the reservations no settle or release has closed yet (db/entities/credit-hold.entity.ts), indexed by
 * age for the sweep of abandoned holds. Filled from the ledger's open reservations, so every account's
 * `credits_held` is again the sum of its rows.
 */
export class Migration20261127090000_credit_holds extends Migration {
  override name = 'Migration20261127090000_credit_holds';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "credit_holds" ("key" varchar(255) not null, "user_id" varchar(255) not null, "workflow_id" varchar(255) not null, "attempt" int not null, "amount" int not null, "created_at" timestamptz not null, primary key ("key"));`,
    );
    this.addSql(`create index "credit_holds_created_at_index" on "credit_holds" ("created_at");`);
    this.addSql(
      `insert into "credit_holds" ("key", "user_id", "workflow_id", "attempt", "amount", "created_at")
       select r.key, r.user_id, r.workflow_id, r.attempt, r.amount, r.created_at from "credit_ledger" r
       where r.kind = 'reserve'
         and not exists (select 1 from "credit_ledger" x
                         where x.key in (replace(r.key, ':reserve', ':settle'), replace(r.key, ':reserve', ':release')));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "credit_holds" cascade;`);
  }
}
