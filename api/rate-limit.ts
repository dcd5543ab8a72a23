/**
 * Request rate limits (spec section 8): an hourly and a daily window per subject, counted in PostgreSQL by
 * rate-limiter-flexible (`RateLimiterPostgres`, table `rate_limits` from the migrations), so every API replica
 * shares one count with no extra service to run.
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
 * One request consumes one point in both windows at once (two concurrent upserts, one round trip of latency).
 * When one window rejects, the point taken from the other is given back (`reward`), so a refused request
 * never spends the allowance of a window that still had room. (The exhausted window's own counter still
 * grows past its maximum: that is the library's upsert and harmless, since a window's reset time is fixed.)
 * Between the two statements another replica may see one point fewer: briefly stricter, never looser.
 *
 * If the store fails (pool exhausted, statement timeout, database down), the request is let through and the
 * failure logged once until the store answers again: availability over strictness. Authentication reads the
 * same database, so a full outage already fails requests before they get here; what remains are partial
 * faults of the counter store, which should not turn into refused traffic. A brief overshoot is the cost.
 */
import type { Context, Middleware } from 'koa';
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { PlanName, PlansFile } from '../common/plans.ts';
import type { AuthState } from './auth.ts';
import { ApiError } from './errors.ts';
import type { Logger } from './logger.ts';
import type { Principal } from './routes/apikeys/service.ts';

const windows = [
  { name: 'hour', seconds: 3600, limitKey: 'per_hour' },
  { name: 'day', seconds: 86_400, limitKey: 'per_day' },
] as const;
type Window = (typeof windows)[number];

const tableName = 'rate_limits';
/** Rows whose window ended over an hour ago are deleted this often (what the library's per-limiter sweep does). */
const sweepIntervalMs = 5 * 60_000;

/** Maximum requests per window; null = unlimited. */
export interface WindowLimits {
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
  window: 'hour' | 'day';
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

type Settled = { ok: true; res: RateLimiterRes } | { ok: false; res: RateLimiterRes } | { ok: false; error: unknown };

export class RateLimits {
  private readonly store: pg.Pool;
  private readonly plans: PlansFile;
  private readonly logger: Logger | undefined;
  /** Limiters by window and maximum; every limiter of a window shares its key prefix, so rows outlive a plan change. */
  private readonly limiters = new Map<string, RateLimiterPostgres>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly ownsPool: boolean;
  private storeFailing = false;

  constructor(pool: pg.Pool, plans: PlansFile, options: { logger?: Logger; ownsPool?: boolean } = {}) {
    this.store = pool;
    this.plans = plans;
    this.logger = options.logger;
    this.ownsPool = options.ownsPool ?? false;
    // Each limiter would otherwise start its own sweep timer; one table-wide sweep is enough.
    this.sweeper = setInterval(() => {
      this.store.query(`delete from ${tableName} where expire < $1`, [Date.now() - 3_600_000]).catch(() => undefined);
    }, sweepIntervalMs);
    this.sweeper.unref();
  }

  /** A store with its own small pool on the gateway's database (closed by `close()`). */
  static open(databaseUrl: string, plans: PlansFile, logger?: Logger): RateLimits {
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: 5,
      connectionTimeoutMillis: 2000,
      query_timeout: 2000,
    });
    pool.on('error', (error) => logger?.warn({ err: error }, 'rate-limit store connection error'));
    return new RateLimits(pool, plans, { logger, ownsPool: true });
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

  /** Takes one request from every limited window of the subject. */
  async consume(subject: Subject): Promise<RateLimitOutcome> {
    const limited = windows.flatMap((window) => {
      const limit = subject.limits[window.limitKey];
      return limit === null ? [] : [{ window, limit }];
    });
    if (limited.length === 0) return { allowed: true, windows: [] };

    const settled = await Promise.all(
      limited.map(({ window, limit }) =>
        this.limiter(window, limit)
          .consume(subject.key)
          .then(
            (res): Settled => ({ ok: true, res }),
            (error: unknown): Settled =>
              error instanceof RateLimiterRes ? { ok: false, res: error } : { ok: false, error },
          ),
      ),
    );

    const failure = settled.find((result) => 'error' in result);
    if (failure && 'error' in failure) {
      if (!this.storeFailing) {
        this.storeFailing = true;
        this.logger?.error(
          { err: failure.error },
          'rate-limit store failed: letting requests through until it recovers',
        );
      }
      return { allowed: true, windows: [] };
    }
    if (this.storeFailing) {
      this.storeFailing = false;
      this.logger?.info('rate-limit store recovered');
    }

    const allowed = settled.every((result) => result.ok);
    const states: WindowState[] = [];
    const refunds: Array<Promise<unknown>> = [];
    settled.forEach((result, index) => {
      const { window, limit } = limited[index]!;
      const res = (result as { res: RateLimiterRes }).res;
      let remaining = result.ok ? res.remainingPoints : 0;
      if (!allowed && result.ok) {
        // Refused by the other window: give this window's point back.
        refunds.push(
          this.limiter(window, limit)
            .reward(subject.key)
            .catch(() => undefined),
        );
        remaining = Math.min(limit, remaining + 1);
      }
      states.push({
        window: window.name,
        limit,
        remaining,
        resetSeconds: Math.ceil(Math.max(res.msBeforeNext, 0) / 1000),
      });
    });
    await Promise.all(refunds);

    if (allowed) return { allowed, windows: states };
    const exhausted = states
      .filter((_, index) => !settled[index]!.ok)
      .reduce((latest, state) => (state.resetSeconds > latest.resetSeconds ? state : latest));
    return { allowed, windows: states, exhausted, retryAfterSeconds: Math.max(1, exhausted.resetSeconds) };
  }

  /** Consumes for the subject, sets the X-RateLimit-* headers, and throws 429 when refused. */
  async enforce(context: Context, subject: Subject): Promise<void> {
    const outcome = await this.consume(subject);
    setHeaders(context, outcome.windows);
    if (outcome.allowed) return;
    const { limit, window } = outcome.exhausted!;
    throw new ApiError(
      'rate_limit_exceeded',
      `Rate limit exceeded: ${limit.toLocaleString('en-US')} requests per ${window} for ${subject.scope}`,
      { retryAfterSeconds: outcome.retryAfterSeconds },
    );
  }

  private limiter(window: Window, points: number): RateLimiterPostgres {
    const id = `${window.name}:${points}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterPostgres({
        storeClient: this.store,
        storeType: 'pool',
        tableName,
        tableCreated: true,
        clearExpiredByTimeout: false,
        keyPrefix: `rl:${window.name}`,
        points,
        duration: window.seconds,
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}

function planScope(plan: PlanName): string {
  return `the ${plan} plan`;
}

function setHeaders(context: Context, states: WindowState[]): void {
  if (states.length === 0) return;
  for (const state of states) {
    const label = state.window === 'hour' ? 'Hour' : 'Day';
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

/** Limits keyed requests by user; mount after `requireKey`. */
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
