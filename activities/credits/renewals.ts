/**
 * Monthly renewals of accounts not billed through Stripe (free, and operator-managed business accounts):
 * every account whose cycle ended starts the next one, catching up every missed month, each grant once per
 * (account, cycle start). Subscriptions are renewed by Stripe's `invoice.paid` instead, never here.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PlanName } from '../../common/plans.ts';
import { AccountPlans } from './accounts.ts';

export async function renewDueCycles(
  orm: MikroORM,
  accounts: AccountPlans,
  now = new Date(),
): Promise<{ renewed: number }> {
  const due = await orm.em.fork().execute<Array<{ id: string; plan: PlanName; plan_cycle_start: string | Date }>>(
    `select id, plan, plan_cycle_start from users
     where stripe_subscription_id is null and plan_cycle_start is not null
       and plan_cycle_start <= ?::timestamptz - interval '28 days'`,
    [now],
  );
  let renewed = 0;
  for (const account of due) {
    let cycleStart = new Date(account.plan_cycle_start);
    for (
      let next = AccountPlans.nextCycleStart(cycleStart);
      next <= now;
      next = AccountPlans.nextCycleStart(cycleStart)
    ) {
      if (await accounts.startCycle(account.id, account.plan, next, 'monthly renewal')) renewed++;
      cycleStart = next;
    }
  }
  return { renewed };
}
