import { Migration } from '@mikro-orm/migrations';

/** The durable capacity queue (db/entities/capacity-waiter.entity.ts): jobs waiting for or holding a slot, saturated models. */
export class Migration20261204110000_capacity_queue extends Migration {
  override name = 'Migration20261204110000_capacity_queue';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "capacity_models" ("model" varchar(255) not null, "saturated_until" timestamptz not null, "backoff_ms" int not null, primary key ("model"));`,
    );

    this.addSql(
      `create table "capacity_waiters" ("holder" varchar(255) not null, "user_id" varchar(255) not null, "model" varchar(255) not null, "kind" varchar(255) not null, "plan_rank" int not null, "priority" int not null, "enqueued_at" timestamptz not null, "granted_at" timestamptz null, primary key ("holder"));`,
    );
    this.addSql(
      `create index "capacity_waiters_user_id_granted_at_index" on "capacity_waiters" ("user_id", "granted_at");`,
    );
    this.addSql(
      `create index "capacity_waiters_model_granted_at_index" on "capacity_waiters" ("model", "granted_at");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "capacity_models" cascade;`);
    this.addSql(`drop table if exists "capacity_waiters" cascade;`);
  }
}
