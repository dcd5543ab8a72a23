import { Migration } from '@mikro-orm/migrations';

export class Migration20261121110302_accounts_credits_billing extends Migration {
  override name = 'Migration20261121110302_accounts_credits_billing';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "rate_limits" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, primary key ("key"));`,
    );

    this.addSql(
      `create table "stripe_events" ("id" varchar(255) not null, "type" varchar(255) not null, "created_at_stripe" bigint not null, "processed_at" timestamptz not null, primary key ("id"));`,
    );

    this.addSql(
      `create table "credit_ledger" ("id" bigserial primary key, "key" varchar(255) not null, "user_id" varchar(255) not null, "kind" varchar(255) not null, "amount" int not null, "workflow_id" varchar(255) null, "attempt" int null, "model" varchar(255) null, "prompt_tokens" int null, "completion_tokens" int null, "estimated" boolean not null default false, "note" varchar(255) null, "created_at" timestamptz not null);`,
    );
    this.addSql(`alter table "credit_ledger" add constraint "credit_ledger_key_unique" unique ("key");`);
    this.addSql(`create index "credit_ledger_user_id_index" on "credit_ledger" ("user_id");`);
    this.addSql(`create index "credit_ledger_workflow_id_index" on "credit_ledger" ("workflow_id");`);

    this.addSql(
      `alter table "users" add "credits_balance" int not null default 0, add "credits_held" int not null default 0, add "plan_cycle_start" timestamptz null, add "custom_limits" jsonb null, add "stripe_customer_id" varchar(255) null, add "stripe_subscription_id" varchar(255) null;`,
    );
    this.addSql(`alter table "users" add constraint "users_stripe_customer_id_unique" unique ("stripe_customer_id");`);

    this.addSql(
      `alter table "credit_ledger" add constraint "credit_ledger_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "rate_limits" cascade;`);
    this.addSql(`drop table if exists "stripe_events" cascade;`);
    this.addSql(`drop table if exists "credit_ledger" cascade;`);

    this.addSql(`alter table "users" drop constraint "users_stripe_customer_id_unique";`);
    this.addSql(
      `alter table "users" drop column "credits_balance", drop column "credits_held", drop column "plan_cycle_start", drop column "custom_limits", drop column "stripe_customer_id", drop column "stripe_subscription_id";`,
    );
  }
}
