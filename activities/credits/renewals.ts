/**
 * Monthly renewals of accounts not billed through Stripe (free, and operator-managed business accounts):
 * every account whose cycle ended starts the next one, catching up every missed month, each grant once per
 * (account, cycle start). Subscriptions are renewed by Stripe's `invoice.paid` instead, never here.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PlanName } from '../../common/plans.ts';
import { AccountPlans } from './accounts.ts';
import type { CreditLedger } from './credit-ledger.ts';

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

/**
 * Releases holds nobody will settle: reservations older than `maxAgeMinutes` with neither a settle nor a
 * release, as left by an API process that died between reserving and starting its workflow. A completion is
 * bounded far below the default hour; should one still settle later, it is charged without a hold to lift.
 */
export async function releaseStaleHolds(
  orm: MikroORM,
  ledger: CreditLedger,
  maxAgeMinutes = 60,
): Promise<{ released: number }> {
  const stale = await orm.em.fork().execute<Array<{ user_id: string; workflow_id: string; attempt: number }>>(
    `select r.user_id, r.workflow_id, r.attempt from credit_ledger r
     where r.kind = 'reserve' and r.created_at < now() - make_interval(mins => ?)
       and not exists (select 1 from credit_ledger x
                       where x.key in (replace(r.key, ':reserve', ':settle'), replace(r.key, ':reserve', ':release')))
     limit 1000`,
    [maxAgeMinutes],
  );
  for (const hold of stale)
    await ledger.release({ userId: hold.user_id, workflowId: hold.workflow_id, attempt: hold.attempt });
  return { released: stale.length };
}
