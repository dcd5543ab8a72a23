/**
 * Circuit breaker per provider, shared by every replica through PostgreSQL (table provider_breakers).
 * Transitions are single atomic statements, so concurrent replicas agree:
 * - closed → open after `failureThreshold` consecutive failures;
 * - open → half-open when, after `cooldownMs`, one replica wins the probe claim (an UPDATE … RETURNING);
 * - half-open → closed on the probe's success, → open (cool-down restarts) on its failure;
 * - a probe that never reports back is reclaimable after `probeTimeoutMs`.
 * Reads for routing use a snapshot cached for `snapshotTtlMs`, invalidated by this replica's own writes.
 *
 * The breaker is advisory: while the platform's database cannot be reached, recording a call's outcome is skipped
 * (that success or failure counts nowhere) rather than turning a provider's answer into a failed call.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { isStoreOutage } from '../../db/errors.ts';
import type { BreakerAdmission } from './plan-candidates.ts';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerView {
  provider: string;
  state: BreakerState;
  consecutiveFailures: number;
  openedAt: Date | null;
  probeStartedAt: Date | null;
  lastError: string | null;
}

export interface BreakerOptions {
  failureThreshold: number;
  cooldownMs: number;
  probeTimeoutMs: number;
  snapshotTtlMs: number;
}

export const defaultBreakerOptions: BreakerOptions = {
  failureThreshold: 5,
  cooldownMs: 30_000,
  probeTimeoutMs: 60_000,
  snapshotTtlMs: 1_000,
};

interface BreakerRow {
  provider: string;
  state: BreakerState;
  consecutive_failures: number;
  opened_at: string | Date | null;
  probe_started_at: string | Date | null;
  last_error: string | null;
}

const toDate = (value: string | Date | null) => (value === null ? null : new Date(value));

export class CircuitBreaker {
  readonly options: BreakerOptions;
  private readonly orm: MikroORM;
  private snapshot: { at: number; views: Map<string, BreakerView> } | null = null;

  constructor(orm: MikroORM, options: Partial<BreakerOptions> = {}) {
    this.orm = orm;
    this.options = { ...defaultBreakerOptions, ...options };
  }

  /** Every provider's breaker as stored (providers never failed have no row: closed). */
  async views(): Promise<Map<string, BreakerView>> {
    if (this.snapshot && Date.now() - this.snapshot.at < this.options.snapshotTtlMs) return this.snapshot.views;
    const rows = await this.orm.em
      .fork()
      .execute<BreakerRow[]>(
        'select provider, state, consecutive_failures, opened_at, probe_started_at, last_error from provider_breakers',
      );
    const views = new Map(
      rows.map((row) => [
        row.provider,
        {
          provider: row.provider,
          state: row.state,
          consecutiveFailures: row.consecutive_failures,
          openedAt: toDate(row.opened_at),
          probeStartedAt: toDate(row.probe_started_at),
          lastError: row.last_error,
        },
      ]),
    );
    this.snapshot = { at: Date.now(), views };
    return views;
  }

  /** Whether routing may use a provider now, from a snapshot of `views()`. */
  admission(view: BreakerView | undefined, now = Date.now()): BreakerAdmission {
    if (!view || view.state === 'closed') return 'closed';
    if (view.state === 'open') {
      return view.openedAt && now - view.openedAt.getTime() >= this.options.cooldownMs ? 'probe' : 'open';
    }
    return view.probeStartedAt && now - view.probeStartedAt.getTime() >= this.options.probeTimeoutMs ? 'probe' : 'open';
  }

  /** Claims the half-open probe; true for exactly one caller per cool-down across all replicas. */
  async claimProbe(provider: string): Promise<boolean> {
    const rows = await this.orm.em.fork().execute<Array<{ provider: string }>>(
      `update provider_breakers set state = 'half_open', probe_started_at = now(), updated_at = now()
       where provider = ? and (
         (state = 'open' and opened_at <= now() - make_interval(secs => ?))
         or (state = 'half_open' and probe_started_at <= now() - make_interval(secs => ?)))
       returning provider`,
      [provider, this.options.cooldownMs / 1000, this.options.probeTimeoutMs / 1000],
    );
    this.snapshot = null;
    return rows.length === 1;
  }

  async recordSuccess(provider: string): Promise<void> {
    await this.recordSuccessRow(provider).catch(skipOnOutage);
  }

  async recordFailure(provider: string, error: string): Promise<BreakerState> {
    return (await this.recordFailureRow(provider, error).catch(skipOnOutage)) ?? 'closed';
  }

  private async recordSuccessRow(provider: string): Promise<void> {
    const known = this.snapshot?.views.get(provider);
    // The hot path: a healthy provider needs no write. A stale snapshot only delays a reset by its TTL.
    if (this.snapshot && (!known || (known.state === 'closed' && known.consecutiveFailures === 0))) return;
    await this.orm.em.fork().execute(
      `update provider_breakers set state = 'closed', consecutive_failures = 0, opened_at = null,
       probe_started_at = null, updated_at = now()
       where provider = ? and (state <> 'closed' or consecutive_failures > 0)`,
      [provider],
      'run',
    );
    this.snapshot = null;
  }

  private async recordFailureRow(provider: string, error: string): Promise<BreakerState> {
    const rows = await this.orm.em.fork().execute<Array<{ state: BreakerState }>>(
      `insert into provider_breakers as b (provider, state, consecutive_failures, opened_at, last_error, updated_at)
       values (?, case when 1 >= ? then 'open' else 'closed' end, 1, case when 1 >= ? then now() end, ?, now())
       on conflict (provider) do update set
         consecutive_failures = b.consecutive_failures + 1,
         state = case when b.state = 'half_open' or (b.state = 'closed' and b.consecutive_failures + 1 >= ?)
                      then 'open' else b.state end,
         opened_at = case when b.state = 'half_open' or (b.state = 'closed' and b.consecutive_failures + 1 >= ?)
                          then now() else b.opened_at end,
         probe_started_at = case when b.state = 'half_open' then null else b.probe_started_at end,
         last_error = excluded.last_error,
         updated_at = now()
       returning state`,
      [
        provider,
        this.options.failureThreshold,
        this.options.failureThreshold,
        error.slice(0, 500),
        this.options.failureThreshold,
        this.options.failureThreshold,
      ],
    );
    this.snapshot = null;
    return rows[0]?.state ?? 'closed';
  }
}

/** A breaker write the database could not take (see the file comment); anything else is thrown. */
function skipOnOutage(error: unknown): undefined {
  if (!isStoreOutage(error)) throw error;
  return undefined;
}
