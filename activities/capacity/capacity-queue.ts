/**
 * The durable capacity queue (docs/capacity-queue.md): jobs that nobody waits on synchronously (a background Response
 * today) ask here for a slot before they call a model, and wait, in their workflow, until they get one.
 *
 * Two things are scarce. An account's slots: at most its plan's `queue.concurrency` such jobs of one account run at
 * once (plans.yaml). A model's providers: when every provider of a model was found saturated (429, overloaded, circuit
 * open), the model is marked (`capacity_models`) and its jobs wait out a back-off (1 s, doubling to a minute); then
 * the first of them in the queue's order probes, and its answer clears the mark for all (its failure doubles the
 * back-off). The rows are the queue: waiting (`granted_at` null) or holding a slot; a job's row goes when it ends, and
 * the sweep of abandoned holds removes the row of a job whose workflow no longer runs.
 *
 * Order: plan rank, then priority, then first come first served, with aging against starvation (common/capacity.ts):
 * the score `plan_rank * 3 + priority + floor(seconds waited / aging)`, ties by arrival. A job waits for its own
 * account's jobs ahead of it, except those held up by a saturated model (no head-of-line blocking across models).
 * Each ask is one transaction under an advisory lock of the account, so two jobs never take the account's last slot.
 */
import type { CapacityAnswer, CapacityRequest } from '../../common/capacity.ts';
import { capacityPriorities, planRank } from '../../common/capacity.ts';
import type { PlanName, PlansFile } from '../../common/plans.ts';
import { transaction, type Pool } from '../../db/pool.ts';

/** How long a probe of a saturated model keeps the others waiting before another may probe (a call's limit). */
const probeHoldSeconds = 150;

/** The queue's order, as SQL over a row `w` (higher first, then earlier). */
const score = (aging: string) =>
  `(w.plan_rank * 3 + w.priority + floor(extract(epoch from (now() - w.enqueued_at)) / ${aging}))`;

/** A waiting row `w` that goes before `me` (a row with its `score`): a higher score, or the same and earlier. */
const goesBefore = (aging: string) =>
  `w.granted_at is null and w.holder <> me.holder
   and (${score(aging)} > me.score
        or (${score(aging)} = me.score and (w.enqueued_at, w.holder) < (me.enqueued_at, me.holder)))`;

export interface QueueDepth {
  kind: string;
  model: string;
  priority: string;
  plan: string;
  waiting: number;
  holding: number;
  oldestWaitSeconds: number;
}

export class CapacityQueue {
  private readonly pool: Pool;
  private readonly plans: PlansFile;

  constructor(pool: Pool, plans: PlansFile) {
    this.pool = pool;
    this.plans = plans;
  }

  /** Asks for a slot: granted (the job may start), or its place in the queue. Idempotent per holder. */
  async acquire(request: CapacityRequest): Promise<CapacityAnswer> {
    const aging = String(this.plans.queue.aging_seconds);
    return transaction(this.pool, async (client) => {
      await client.query(`select pg_advisory_xact_lock(hashtext('capacity:' || $1))`, [request.userId]);
      const { rows: accounts } = await client.query<{ plan: PlanName }>('select plan from users where id = $1', [
        request.userId,
      ]);
      // No account row: the operator's key (user `operator`), whose work runs as the top plan's.
      const plan = accounts[0]?.plan ?? 'business';
      await client.query(
        `insert into capacity_waiters (holder, user_id, model, kind, plan_rank, priority, enqueued_at)
         values ($1, $2, $3, $4, $5, $6, now()) on conflict (holder) do nothing`,
        [
          request.holder,
          request.userId,
          request.model,
          request.kind,
          planRank(plan),
          capacityPriorities.indexOf(request.priority),
        ],
      );
      const { rows } = await client.query<{
        granted: boolean;
        held: number;
        ahead: number;
        saturated: boolean | null;
        model_ahead: number;
      }>(
        `with me as (select w.*, ${score(aging)} as score from capacity_waiters w where w.holder = $1),
              saturated as (select model from capacity_models where saturated_until > now())
         select (select granted_at is not null from me) as granted,
                (select count(*)::int from capacity_waiters where user_id = $2 and granted_at is not null) as held,
                (select count(*)::int from capacity_waiters w, me
                 where w.user_id = $2 and w.model not in (select model from saturated) and ${goesBefore(aging)}) as ahead,
                (select saturated_until > now() from capacity_models where model = $3) as saturated,
                (select count(*)::int from capacity_waiters w, me
                 where w.model = $3 and ${goesBefore(aging)}) as model_ahead`,
        [request.holder, request.userId, request.model],
      );
      const state = rows[0]!;
      if (state.granted) return { granted: true };
      // A saturated model: wait out its back-off; past it, only the first of its jobs probes.
      if (state.saturated === true || (state.saturated === false && state.model_ahead > 0)) {
        return { granted: false, position: state.model_ahead + 1, reason: 'model' };
      }
      const limit = this.plans.queue.concurrency[plan] ?? 1;
      if (state.held >= limit || state.ahead > 0) {
        return { granted: false, position: state.ahead + 1, reason: 'account' };
      }
      await client.query('update capacity_waiters set granted_at = now() where holder = $1', [request.holder]);
      if (state.saturated === false) {
        // This job probes the model: the others wait for its outcome (or for the probe's own limit).
        await client.query(
          `update capacity_models set saturated_until = now() + make_interval(secs => $2) where model = $1`,
          [request.model, probeHoldSeconds],
        );
        return { granted: true, probe: true };
      }
      return { granted: true };
    });
  }

  /** The job ended (or goes back to the queue: `requeue` keeps its place by its arrival time). */
  async release(holder: string, requeue = false): Promise<void> {
    if (requeue) await this.pool.query('update capacity_waiters set granted_at = null where holder = $1', [holder]);
    else await this.pool.query('delete from capacity_waiters where holder = $1', [holder]);
  }

  /** Every provider of `model` was saturated: its jobs wait, the back-off doubling each time (1 s to a minute). */
  async saturated(model: string): Promise<void> {
    await this.pool.query(
      `insert into capacity_models as m (model, saturated_until, backoff_ms)
       values ($1, now() + interval '1 second', 1000)
       on conflict (model) do update
         set backoff_ms = least(60000, m.backoff_ms * 2),
             saturated_until = now() + make_interval(secs => least(60000, m.backoff_ms * 2) / 1000.0)`,
      [model],
    );
  }

  /** A job of `model` was answered: the model has capacity again. */
  async served(model: string): Promise<void> {
    await this.pool.query('delete from capacity_models where model = $1', [model]);
  }

  /** A waiting job's place (null when it is not waiting). */
  async position(holder: string): Promise<number | null> {
    const aging = String(this.plans.queue.aging_seconds);
    const { rows } = await this.pool.query<{ position: number }>(
      `with me as (select w.*, ${score(aging)} as score from capacity_waiters w where w.holder = $1 and w.granted_at is null)
       select 1 + (select count(*)::int from capacity_waiters w, me
                   where w.user_id = me.user_id and ${goesBefore(aging)})
              as position
       from me`,
      [holder],
    );
    return rows[0]?.position ?? null;
  }

  /** The queue now, by kind, model, priority and plan: for `/metrics` and the operator console. */
  async depth(): Promise<QueueDepth[]> {
    const { rows } = await this.pool.query<{
      kind: string;
      model: string;
      priority: number;
      plan_rank: number;
      waiting: number;
      holding: number;
      oldest: number | null;
    }>(
      `select kind, model, priority, plan_rank,
              count(*) filter (where granted_at is null)::int as waiting,
              count(*) filter (where granted_at is not null)::int as holding,
              extract(epoch from now() - min(enqueued_at) filter (where granted_at is null))::float8 as oldest
       from capacity_waiters group by kind, model, priority, plan_rank order by kind, model, priority desc`,
    );
    const plans = Object.keys(this.plans.plans) as PlanName[];
    // A batch's lines wait in its own workflow rather than here, each batch counting its waiting ones (batches): shown
    // beside the queue, as low priority (the operator's batches, with no account row, as the top plan's).
    const { rows: lines } = await this.pool.query<{
      model: string | null;
      plan: string;
      waiting: number;
      oldest: number | null;
    }>(
      `select b.waiting_model as model, coalesce(u.plan, 'business') as plan, sum(b.lines_waiting)::int as waiting,
              extract(epoch from now() - min(b.waiting_since))::float8 as oldest
       from batches b left join users u on u.id = b.user_id
       where b.lines_waiting > 0 group by 1, 2 order by 1, 2`,
    );
    const batchLines = lines.map((row) => ({
      kind: 'batch-line',
      model: row.model ?? 'unknown',
      priority: 'low',
      plan: row.plan,
      waiting: row.waiting,
      holding: 0,
      oldestWaitSeconds: row.oldest ?? 0,
    }));
    return rows
      .map((row) => ({
        kind: row.kind,
        model: row.model,
        priority: capacityPriorities[row.priority] ?? String(row.priority),
        plan: plans.find((plan) => planRank(plan) === row.plan_rank) ?? String(row.plan_rank),
        waiting: row.waiting,
        holding: row.holding,
        oldestWaitSeconds: row.oldest ?? 0,
      }))
      .concat(batchLines);
  }

  /** Jobs in the queue longer than `graceMs` (the sweep asks whether each one's workflow still runs). */
  async aged(graceMs: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ holder: string }>(
      `select holder from capacity_waiters where enqueued_at < now() - make_interval(secs => $1::float8 / 1000)
       order by enqueued_at limit 500`,
      [graceMs],
    );
    return rows.map((row) => row.holder);
  }
}

/** The queue's steps, local activities of the jobs' workflows (workflows/capacity.ts). */
export function createCapacityActivities(dependencies: { capacity: CapacityQueue }) {
  const { capacity } = dependencies;
  return {
    acquireCapacity: (request: CapacityRequest) => capacity.acquire(request),
    releaseCapacity: (input: { holder: string; requeue?: boolean }) => capacity.release(input.holder, input.requeue),
    modelSaturated: (model: string) => capacity.saturated(model),
    modelServed: (model: string) => capacity.served(model),
  };
}

export type CapacityActivities = ReturnType<typeof createCapacityActivities>;
