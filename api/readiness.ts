/**
 * What the API process depends on, watched: its PostgreSQL and its Temporal server, each probed about once a second
 * on a connection of its own. `/health` reports both and answers 503 while either cannot be reached (a readiness
 * probe: a load balancer sends no one to a process that cannot serve); `/health/live` answers 200 as long as the
 * process serves HTTP at all (a liveness probe: restarting a process whose database is down helps nobody).
 *
 * While Temporal is seen down, calls that would start, signal, query or describe a workflow fail at once with 503
 * `service_unavailable` and `Retry-After` (the client interceptor below) instead of waiting out the Temporal client's
 * own retries (about 10 s) and then failing as 500: a client is told promptly, and what it sends again once the server
 * is back runs. Calls already under way (a response waiting for its workflow's result) keep waiting: accepted work is
 * never dropped. The database needs no such gate: a refused connection fails at once, and a store that hangs fails after
 * the pool's connection timeout (5 s), both rendered as 503 by the error renderer (api/errors.ts).
 *
 * A probe that fails with a refused or reset connection marks its dependency down at once; one that only times out
 * needs two in a row (on a busy machine one slow probe says little); one success marks it up again.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import Router from '@koa/router';
import { z } from 'zod';
import { openPool, type Pool } from '../db/pool.ts';
import { isoDate, json, route, type RouteContract } from './openapi/contract.ts';
import { dependencyUnavailable, outageRetryAfterSeconds, type DependencyName } from './errors.ts';

export interface DependencyStatus {
  status: 'ok' | 'unavailable';
  /** When it was last probed (ISO 8601); null before the first probe ended. */
  checked_at: string | null;
  /** How long the last successful probe took. */
  latency_ms?: number;
  /** Why it is unavailable (the last probe's error). */
  error?: string;
  /** Since when it has been unavailable (ISO 8601). */
  since?: string;
}

export interface ReadinessReport {
  status: 'ok' | 'unavailable';
  dependencies: Record<DependencyName, DependencyStatus>;
}

interface Probe {
  name: DependencyName;
  run(signal: AbortSignal): Promise<void>;
}

interface State {
  up: boolean;
  checkedAt: Date | null;
  latencyMs?: number;
  error?: string;
  since?: Date;
  timeouts: number;
}

export class Readiness {
  private readonly probes: Probe[];
  private readonly states = new Map<DependencyName, State>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly closers: Array<() => Promise<void>> = [];

  constructor(options: {
    databaseUrl: string;
    temporal: Pick<NativeConnection, 'workflowService' | 'withDeadline'>;
    namespace: string;
    intervalMs?: number;
    timeoutMs?: number;
  }) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.timeoutMs = options.timeoutMs ?? 2_000;
    // A pool of one, apart from the request pools: a probe never waits behind the load it is asked about.
    const pool: Pool = openPool(options.databaseUrl, { max: 1, onError: () => undefined });
    this.closers.push(() => pool.end());
    const { temporal, namespace } = options;
    this.probes = [
      {
        name: 'database',
        run: async (signal) => {
          await abortable(pool.query('select 1'), signal);
        },
      },
      {
        name: 'temporal',
        run: async () => {
          await temporal.withDeadline(Date.now() + this.timeoutMs, () =>
            temporal.workflowService.describeNamespace({ namespace }),
          );
        },
      },
    ];
    // Up until a probe says otherwise: the process started against both.
    for (const probe of this.probes) this.states.set(probe.name, { up: true, checkedAt: null, timeouts: 0 });
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      this.running = this.probeAll().finally(() => {
        this.running = null;
        if (this.timer) this.timer = setTimeout(tick, this.intervalMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    for (const close of this.closers) await close().catch(() => undefined);
  }

  /** Whether the dependency answered its last probe (or has not been seen failing yet). */
  isUp(name: DependencyName): boolean {
    return this.states.get(name)!.up;
  }

  report(): ReadinessReport {
    const dependencies = {} as Record<DependencyName, DependencyStatus>;
    for (const [name, state] of this.states) {
      dependencies[name] = {
        status: state.up ? 'ok' : 'unavailable',
        checked_at: state.checkedAt?.toISOString() ?? null,
        ...(state.up && state.latencyMs !== undefined ? { latency_ms: Math.round(state.latencyMs * 10) / 10 } : {}),
        ...(!state.up && state.error ? { error: state.error } : {}),
        ...(!state.up && state.since ? { since: state.since.toISOString() } : {}),
      };
    }
    const ready = [...this.states.values()].every((state) => state.up);
    return { status: ready ? 'ok' : 'unavailable', dependencies };
  }

  /** Refuses with 503 while Temporal is seen down (see the file comment). */
  assertTemporal(): void {
    if (!this.isUp('temporal')) throw dependencyUnavailable('temporal');
  }

  private async probeAll(): Promise<void> {
    await Promise.all(this.probes.map((probe) => this.probeOne(probe)));
  }

  private async probeOne(probe: Probe): Promise<void> {
    const state = this.states.get(probe.name)!;
    const started = performance.now();
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      await probe.run(signal);
      state.up = true;
      state.latencyMs = performance.now() - started;
      state.timeouts = 0;
      state.error = undefined;
      state.since = undefined;
    } catch (error) {
      const timedOut = signal.aborted || isDeadline(error);
      state.timeouts = timedOut ? state.timeouts + 1 : 0;
      if (!timedOut || state.timeouts >= 2) {
        if (state.up) state.since = new Date();
        state.up = false;
        state.error = timedOut
          ? `no answer within ${this.timeoutMs} ms`
          : error instanceof Error
            ? error.message
            : String(error);
      }
    } finally {
      state.checkedAt = new Date();
    }
  }
}

/**
 * A Temporal client interceptor: every call that would reach the server for a request fails fast while the server is
 * seen down. Waiting for a result is not intercepted (see the file comment).
 */
export function readinessInterceptor(readiness: Readiness): WorkflowClientInterceptor {
  const gate = <Input, Output>(input: Input, next: (input: Input) => Output): Output => {
    readiness.assertTemporal();
    return next(input);
  };
  return {
    start: gate,
    startWithDetails: gate,
    startUpdate: gate,
    startUpdateWithStart: gate,
    signal: gate,
    signalWithStart: gate,
    query: gate,
    terminate: gate,
    cancel: gate,
    describe: gate,
  };
}

/** `/health` (readiness: each dependency, 503 while one is down) and `/health/live` (the process serves). */
export function healthRoutes(readiness: Readiness, body: Record<string, string>): Router {
  const router = new Router();
  router.get('/health/live', (context) => {
    context.body = { status: 'ok', ...body };
  });
  router.get('/health', (context) => {
    const report = readiness.report();
    context.status = report.status === 'ok' ? 200 : 503;
    if (report.status !== 'ok') context.set('Retry-After', String(outageRetryAfterSeconds));
    context.set('Cache-Control', 'no-store');
    context.body = { status: report.status, ...body, dependencies: report.dependencies };
  });
  return router;
}

function isDeadline(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 4;
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

const dependencyStatus = z.strictObject({
  status: z.enum(['ok', 'unavailable']),
  checked_at: isoDate.nullable().meta({ description: 'When it was last probed; null before the first probe ended' }),
  latency_ms: z.number().optional().meta({ description: 'How long its last successful probe took' }),
  error: z.string().optional().meta({ description: 'Why it is unavailable' }),
  since: isoDate.optional().meta({ description: 'Since when it has been unavailable' }),
});

/** The contracts of `/health` and `/health/live` for a service whose bodies carry `extra` besides status and version. */
export function healthContracts(service: string, extra: z.ZodRawShape = {}): RouteContract[] {
  const report = z.strictObject({
    status: z.enum(['ok', 'unavailable']),
    ...extra,
    version: z.string(),
    dependencies: z
      .strictObject({ database: dependencyStatus, temporal: dependencyStatus })
      .meta({ description: 'The platform’s PostgreSQL and Temporal server, as this process last probed them' }),
  });
  return [
    route({
      method: 'GET',
      path: '/health',
      summary: 'Readiness: the process and what it depends on',
      description:
        'Answers 200 while this process can serve: its PostgreSQL and its Temporal server answer their probes ' +
        '(about once a second). While either is down it answers 503 with Retry-After, naming which and since when; ' +
        'requests that need it answer 503 `service_unavailable` meanwhile.',
      tags: ['Operations'],
      access: 'public',
      responses: {
        200: json(report, `The ${service} can serve`),
        503: json(report, `A dependency of the ${service} is down`),
      },
    }),
    route({
      method: 'GET',
      path: '/health/live',
      summary: 'Liveness: the process serves HTTP',
      tags: ['Operations'],
      access: 'public',
      responses: {
        200: json(z.strictObject({ status: z.literal('ok'), ...extra, version: z.string() }), `The ${service} is up`),
      },
    }),
  ];
}
