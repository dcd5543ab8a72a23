import { Migration } from '@mikro-orm/migrations';

/**
 * The platform's rows in the dashboard's daily usage tables (migration `usage-rollups`): subject `*` (no owner and no
 * user id is `*`), one row per day and tool or agent, the sum of every account's. The fold adds each change to its
 * owner's row and to the platform's from now on (api/services/dashboard/usage-fold.ts), so the operator's dashboard
 * reads as few rows as one account's, however many accounts are active; summing every account's rows by day instead
 * took ~25 ms a statement with 1,000 accounts active every day and ~400 ms with 10,000. Computed here from the rows
 * folded so far; changes not folded yet stay changes (read as such, and folded into both). The indexes by day served
 * that sum only and go. Run before API processes of this version fold (as `npm start` and `npm run migrate` do): a
 * process of the version before would fold changes into the accounts' rows only.
 */
export class Migration20261202100000_usage_platform_days extends Migration {
  override name = 'Migration20261202100000_usage_platform_days';

  override up(): void | Promise<void> {
    this.addSql(`insert into "usage_message_days" ("owner", "day", "tool_name", "messages")
      select '*', "day", "tool_name", sum("messages") from "usage_message_days" group by "day", "tool_name";`);
    this.addSql(`insert into "usage_turn_days" ("owner", "day", "agent_id", "turns", "failed")
      select '*', "day", "agent_id", sum("turns"), sum("failed") from "usage_turn_days" group by "day", "agent_id";`);
    this.addSql(`insert into "usage_credit_days" ("user_id", "day", "agent_id", "settlements", "credits")
      select '*', "day", "agent_id", sum("settlements"), sum("credits") from "usage_credit_days"
      group by "day", "agent_id";`);
    for (const table of ['usage_message_days', 'usage_turn_days', 'usage_credit_days']) {
      this.addSql(`drop index "${table}_day_index";`);
    }
  }

  override down(): void | Promise<void> {
    for (const table of ['usage_message_days', 'usage_turn_days', 'usage_credit_days']) {
      this.addSql(`create index "${table}_day_index" on "${table}" ("day");`);
    }
    this.addSql(`delete from "usage_message_days" where "owner" = '*';`);
    this.addSql(`delete from "usage_turn_days" where "owner" = '*';`);
    this.addSql(`delete from "usage_credit_days" where "user_id" = '*';`);
  }
}
