/**
 * Plans on accounts. A plan cycle starts when an account is created, when its plan changes, and every month
 * after (the credit-grants workflow renews it); each start grants that plan's monthly credits once, keyed by
 * account and cycle start. Unused credits roll over: a grant adds to the balance rather than resetting it.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PlanName, PlansFile } from '../../common/plans.ts';
import { CreditLedger } from './credit-ledger.ts';

export class AccountPlans {
  private readonly orm: MikroORM;
  private readonly ledger: CreditLedger;
  private readonly plans: PlansFile;

  constructor(orm: MikroORM, ledger: CreditLedger, plans: PlansFile) {
    this.orm = orm;
    this.ledger = ledger;
    this.plans = plans;
  }

  /**
   * Puts the account on `plan` from `cycleStart` and grants that plan's monthly credits, once per
   * (account, cycle start). Returns whether credits were granted now (false: this cycle was granted before).
   */
  async startCycle(userId: string, plan: PlanName, cycleStart: Date, reason: string): Promise<boolean> {
    await this.orm.em
      .fork()
      .execute('update users set plan = ?, plan_cycle_start = ? where id = ?', [plan, cycleStart, userId], 'run');
    return this.ledger.credit({
      userId,
      key: `grant:${userId}:${cycleStart.toISOString()}`,
      kind: 'grant',
      amount: this.plans.plans[plan].monthly_credits,
      note: `${plan} monthly credits (${reason})`,
    });
  }

  /**
   * Plans and the ledger inside the transaction of `em` (a transaction's EntityManager): both reach the database only
   * through `orm.em.fork()`, so an ORM whose fork is that EntityManager makes a plan change and its grant part of the
   * caller's transaction (a Stripe event's effects, an operator's change with its audit row).
   */
  static within(em: MikroORM['em'], plans: PlansFile): AccountPlans {
    const scoped = { em: { fork: () => em } } as unknown as MikroORM;
    return new AccountPlans(scoped, new CreditLedger(scoped), plans);
  }

  /** These plans inside the transaction of `em` (`within`, with this instance's plans). */
  inTransaction(em: MikroORM['em']): AccountPlans {
    return AccountPlans.within(em, this.plans);
  }

  /** The current cycle's start and the next one's: calendar months from the cycle start, clamped to month ends. */
  static nextCycleStart(cycleStart: Date): Date {
    const next = new Date(cycleStart);
    const day = next.getUTCDate();
    next.setUTCDate(1);
    next.setUTCMonth(next.getUTCMonth() + 1);
    const lastDay = new Date(Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 0)).getUTCDate();
    next.setUTCDate(Math.min(day, lastDay));
    return next;
  }
}
