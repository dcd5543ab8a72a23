/**
 * Request rate limits (spec section 8): an hourly and a daily window per subject, counted in PostgreSQL (table
 * `rate_limits`: key, points, expire in epoch ms), so every API replica shares one count with no extra service.
 *
 * Subjects: `user:<id>` for keyed callers (the plan's limits, each window overridden by the user's
 * `custom_limits.per_hour` / `per_day` when that key is present: a number, or null for unlimited);
 * `ip:<address>` for guests (`guest_rate_limits`). The operator key is never limited. A null limit is unlimited
 * and is neither counted nor reported.
 *
 * Windows are fixed: a window opens on the subject's first request and resets `duration` later.
 *
 * Every limited response (success or 429) carries:
 *   X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset  the binding window (fewest requests left; on a
 *                                                               tie, the one resetting later); Reset in seconds
 *   X-RateLimit-Limit-Hour, X-RateLimit-Remaining-Hour, X-RateLimit-Reset-Hour   the hourly window
 *   X-RateLimit-Limit-Day, X-RateLimit-Remaining-Day, X-RateLimit-Reset-Day      the daily window
 * (a window's headers are left out when it is unlimited). A 429 adds `Retry-After` and `error.retry_after`: the
 * seconds until every exhausted window has reset.
 *
 * One request consumes one point in every limited window with one upsert (`countingCte`); a completion's windows
 * are counted in the same statement as its credit reservation (api/gateway/admission.ts). When one window refuses, the
 * point taken from the other is given back, so a refused request never spends the allowance of a window that still
 * had room. (The exhausted window's own counter still grows past its maximum: harmless, since a window's reset time
 * is fixed.) Between the two statements another replica may see one point fewer: briefly stricter, never looser.
 *
 * The counting was rate-limiter-flexible's `RateLimiterPostgres` until profiles of the shipped platform showed its
 * cost: one statement (and round trip, and PostgreSQL backend wake-up) per window per request, which nothing could
 * join with the reservation every completion makes anyway. The table and its semantics are the library's own.
 *
 * If the store fails (pool exhausted, statement timeout, database down), the request is let through and the
 * failure logged once until the store answers again: availability over strictness. A completion's counting shares
 * its statement with the credit reservation it cannot do without, so it fails with it; for other requests, partial
 * faults of the counter store should not turn into refused traffic. A brief overshoot is the cost.
 */
import type { Context, Middleware } from 'koa';
import { run, type Pool, type Queryable } from '../db/pool.ts';
import type { PlanName, PlansFile } from '../common/plans.ts';
import type { AuthState } from './auth.ts';
import { ApiError } from './errors.ts';
import type { Logger } from '../process/logger.ts';
import type { Principal } from './services/apikeys/service.ts';

const windows = [
  { name: 'minute', seconds: 60, limitKey: 'per_minute' },
  { name: 'hour', seconds: 3600, limitKey: 'per_hour' },
  { name: 'day', seconds: 86_400, limitKey: 'per_day' },
] as const;
type Window = (typeof windows)[number];

/** Rows whose window ended over an hour ago are deleted this often. */
const sweepIntervalMs = 5 * 60_000;

/** Maximum requests per window; null = unlimited. */
export interface WindowLimits {
  /** Only the agent service's per-IP limit has a minute window (spec 8: 30 requests per 60 seconds). */
  per_minute?: number | null;
  per_hour: number | null;
  per_day: number | null;
}

/** Whose requests are counted, under which limits; `scope` names them in the 429 message. */
export interface Subject {
  key: string;
  limits: WindowLimits;
  scope: string;
}

export interface WindowState {
  window: 'minute' | 'hour' | 'day';
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimitOutcome {
  allowed: boolean;
  /** The limited windows (unlimited ones are absent). Empty when the store failed. */
  windows: WindowState[];
  /** Set when refused: seconds until every exhausted window has reset. */
  retryAfterSeconds?: number;
  /** Set when refused: the exhausted window with the latest reset. */
  exhausted?: WindowState;
}

/** One limited window of a subject, as counted: its row key and its maximum. */
interface Counter {
  window: Window;
  key: string;
  limit: number;
}

/** A counter's row after the upsert. */
export interface CountedRow {
  key: string;
  points: number;
  expire: string | number;
}

/**
 * The counting upsert as two CTEs, `counted` (each counter's row after taking a point) and `allowed` (whether every
 * counter is within its maximum), over parameters `$first`…`$first+3` in the order of `RateLimits.countingValues`.
 */
export function countingCte(first: number): string {
  const [keys, expires, now, maxima] = [0, 1, 2, 3].map((offset) => `$${first + offset}`);
  return `counted as (
      insert into rate_limits (key, points, expire)
      select key, 1, expire from unnest(${keys}::text[], ${expires}::bigint[]) as counter(key, expire)
      on conflict (key) do update set
        points = case when rate_limits.expire is null or rate_limits.expire <= ${now}::bigint
                      then 1 else rate_limits.points + 1 end,
        expire = case when rate_limits.expire is null or rate_limits.expire <= ${now}::bigint
                      then excluded.expire else rate_limits.expire end
      returning key, points, expire
    ), allowed as (
      select coalesce(bool_and(counted.points <= maximum.points), true) as ok
      from counted join unnest(${keys}::text[], ${maxima}::int[]) as maximum(key, points) using (key)
    )`;
}

const countStatement = {
  name: 'rate-limit-count',
  text: `with ${countingCte(1)} select key, points, expire from counted`,
};
const refundStatement = {
  name: 'rate-limit-refund',
  text: 'update rate_limits set points = points - 1 where key = any($1::text[]) and points > 0',
};
const sweepStatement = { name: 'rate-limit-sweep', text: 'delete from rate_limits where expire < $1::bigint' };

export class RateLimits {
  private readonly store: Pool;
  private readonly plans: PlansFile;
  private readonly logger: Logger | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private readonly ownsPool: boolean;
  private storeFailing = false;

  constructor(pool: Pool, plans: PlansFile, options: { logger?: Logger; ownsPool?: boolean } = {}) {
    this.store = pool;
    this.plans = plans;
    this.logger = options.logger;
    this.ownsPool = options.ownsPool ?? false;
    this.sweeper = setInterval(() => {
      run(this.store, sweepStatement, [Date.now() - 3_600_000]).catch(() => undefined);
    }, sweepIntervalMs);
    this.sweeper.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    if (this.ownsPool) await this.store.end();
  }

  /** The subject of a keyed request, or null for the operator (never limited). */
  subjectFor(principal: Principal): Subject | null {
    if (principal.operator) return null;
    const plan = this.plans.plans[principal.plan].rate_limits;
    const custom = principal.customLimits ?? {};
    const limits: WindowLimits = {
      per_hour: custom.per_hour !== undefined ? custom.per_hour : plan.per_hour,
      per_day: custom.per_day !== undefined ? custom.per_day : plan.per_day,
    };
    const customised = custom.per_hour !== undefined || custom.per_day !== undefined;
    return { key: `user:${principal.userId}`, limits, scope: customised ? 'this account' : planScope(principal.plan) };
  }

  guestSubject(ip: string): Subject {
    return { key: `ip:${ip}`, limits: this.plans.guest_rate_limits, scope: 'unauthenticated requests per IP' };
  }

  /** A messaging-app chat not linked to an account: the guest row, counted per chat. */
  messengerSubject(chat: string): Subject {
    return { key: `chat:${chat}`, limits: this.plans.guest_rate_limits, scope: 'messages per chat without an account' };
  }

  /** The values of `countingCte` for a subject (no subject: nothing is counted). */
  countingValues(subject: Subject | null, now = Date.now()): unknown[] {
    const counters = this.counters(subject);
    return [
      counters.map((counter) => counter.key),
      counters.map((counter) => now + counter.window.seconds * 1000),
      now,
      counters.map((counter) => counter.limit),
    ];
  }

  /**
   * What the counted rows mean for the subject; when one window refused, the points the others took are given
   * back (a second statement, on the refusing path only).
   */
  async outcome(
    subject: Subject | null,
    rows: CountedRow[],
    now = Date.now(),
    /** False when the caller rolls the counting back itself on a refusal (it counted inside its transaction). */
    refund = true,
  ): Promise<RateLimitOutcome> {
    const counters = this.counters(subject);
    if (counters.length === 0) return { allowed: true, windows: [] };
    const counted = counters.map((counter) => {
      const row = rows.find((candidate) => candidate.key === counter.key);
      const points = row?.points ?? 0;
      const resetSeconds = Math.ceil(Math.max(Number(row?.expire ?? now) - now, 0) / 1000);
      return { counter, points, ok: points <= counter.limit, resetSeconds };
    });
    const allowed = counted.every((entry) => entry.ok);
    const refunds = allowed || !refund ? [] : counted.filter((entry) => entry.ok).map((entry) => entry.counter.key);
    if (refunds.length > 0) await run(this.store, refundStatement, [refunds]).catch(() => undefined);
    const states: WindowState[] = counted.map(({ counter, points, ok, resetSeconds }) => ({
      window: counter.window.name,
      limit: counter.limit,
      // A refunded window keeps the point the refused request took back.
      remaining: ok ? Math.min(counter.limit, Math.max(0, counter.limit - points + (allowed ? 0 : 1))) : 0,
      resetSeconds,
    }));
    if (allowed) return { allowed, windows: states };
    const exhausted = states
      .filter((_, index) => !counted[index]!.ok)
      .reduce((latest, state) => (state.resetSeconds > latest.resetSeconds ? state : latest));
    return { allowed, windows: states, exhausted, retryAfterSeconds: Math.max(1, exhausted.resetSeconds) };
  }

  /** Takes one request from every limited window of the subject (one statement). */
  async consume(subject: Subject): Promise<RateLimitOutcome> {
    if (this.counters(subject).length === 0) return { allowed: true, windows: [] };
    const now = Date.now();
    let rows: CountedRow[];
    try {
      rows = await run<CountedRow>(this.store, countStatement, this.countingValues(subject, now));
    } catch (error) {
      this.storeFailed(error);
      return { allowed: true, windows: [] };
    }
    this.storeAnswered();
    return this.outcome(subject, rows, now);
  }

  /**
   * Takes one request from every limited window of the subject inside the caller's transaction (a chat turn's
   * opening): a refusal is the caller's to roll back, which gives every window its point back. A failing store fails
   * the transaction, as a completion's admission fails with its reservation.
   */
  async consumeWithin(executor: Queryable, subject: Subject): Promise<RateLimitOutcome> {
    if (this.counters(subject).length === 0) return { allowed: true, windows: [] };
    const now = Date.now();
    const rows = await run<CountedRow>(executor, countStatement, this.countingValues(subject, now));
    return this.outcome(subject, rows, now, false);
  }

  /** Consumes for the subject, then answers as `apply` does. */
  async enforce(context: Context, subject: Subject): Promise<void> {
    this.apply(context, subject, await this.consume(subject));
  }

  /** Sets the X-RateLimit-* headers of an outcome and throws 429 when it refused. */
  apply(context: Context, subject: Subject | null, outcome: RateLimitOutcome): void {
    setHeaders(context, outcome.windows);
    if (outcome.allowed || !subject) return;
    const { limit, window } = outcome.exhausted!;
    throw new ApiError(
      'rate_limit_exceeded',
      `Rate limit exceeded: ${limit.toLocaleString('en-US')} requests per ${window} for ${subject.scope}`,
      { retryAfterSeconds: outcome.retryAfterSeconds },
    );
  }

  private counters(subject: Subject | null): Counter[] {
    if (!subject) return [];
    return windows.flatMap((window) => {
      const limit = subject.limits[window.limitKey] ?? null;
      return limit === null ? [] : [{ window, key: `rl:${window.name}:${subject.key}`, limit }];
    });
  }

  /**
   * If the store fails (pool exhausted, statement timeout, database down), the request is let through and the
   * failure logged once until the store answers again: availability over strictness (see the file comment).
   */
  private storeFailed(error: unknown): void {
    if (this.storeFailing) return;
    this.storeFailing = true;
    this.logger?.error({ err: error }, 'rate-limit store failed: letting requests through until it recovers');
  }

  private storeAnswered(): void {
    if (!this.storeFailing) return;
    this.storeFailing = false;
    this.logger?.info('rate-limit store recovered');
  }
}

function planScope(plan: PlanName): string {
  return `the ${plan} plan`;
}

function setHeaders(context: Context, states: WindowState[]): void {
  if (states.length === 0) return;
  for (const state of states) {
    const label = { minute: 'Minute', hour: 'Hour', day: 'Day' }[state.window];
    context.set(`X-RateLimit-Limit-${label}`, String(state.limit));
    context.set(`X-RateLimit-Remaining-${label}`, String(state.remaining));
    context.set(`X-RateLimit-Reset-${label}`, String(state.resetSeconds));
  }
  const binding = states.reduce((tightest, state) =>
    state.remaining < tightest.remaining ||
    (state.remaining === tightest.remaining && state.resetSeconds > tightest.resetSeconds)
      ? state
      : tightest,
  );
  context.set('X-RateLimit-Limit', String(binding.limit));
  context.set('X-RateLimit-Remaining', String(binding.remaining));
  context.set('X-RateLimit-Reset', String(binding.resetSeconds));
}

/**
 * Limits keyed requests by user; mount after `requireKey`. (A completion is limited by its admission instead, in
 * the statement that reserves its credits: see api/gateway/admission.ts.)
 */
export function limitKeyed(limits: RateLimits): Middleware<AuthState> {
  return async (context, next) => {
    const subject = limits.subjectFor(context.state.principal);
    if (subject) await limits.enforce(context, subject);
    await next();
  };
}

/** Limits unauthenticated requests by client IP (`ctx.ip`, which honours X-Forwarded-For as `app.proxy` is on). */
export function limitGuest(limits: RateLimits): Middleware {
  return async (context, next) => {
    await limits.enforce(context, limits.guestSubject(context.ip));
    await next();
  };
}
