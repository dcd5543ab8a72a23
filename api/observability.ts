/**
 * Request logs and Prometheus metrics. Each app has its own registry (tests run several apps in one process);
 * `GET /metrics` exposes it.
 */
import { randomBytes } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { QueueDepth } from '../activities/capacity/capacity-queue.ts';
import { agentActivityRegistry } from '../activities/agent-metrics.ts';
import type { Logger } from '../process/logger.ts';
import { ServerTiming } from './server-timing.ts';

export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration = new Histogram({
    name: 'tessera_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly completions = new Counter({
    name: 'tessera_completions_total',
    help: 'Completions by served model and outcome',
    labelNames: ['model', 'outcome', 'stream'] as const,
    registers: [this.registry],
  });
  readonly eagerStartsDeclined = new Counter({
    name: 'tessera_eager_starts_declined_total',
    help: 'Completions whose workflow could not start in this process (no free workflow task slot): the slow path',
    registers: [this.registry],
  });
  readonly attempts = new Counter({
    name: 'tessera_provider_attempts_total',
    help: 'Provider calls by provider and outcome (failover attempts included)',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'tessera_' });
  }

  recordCompletion(model: string, outcome: string, stream: boolean): void {
    this.completions.inc({ model, outcome, stream: String(stream) });
  }

  recordAttempt(provider: string, outcome: string): void {
    this.attempts.inc({ provider, outcome });
  }
}

/**
 * What the agent service's `GET /metrics` exposes: its request metrics, the agent turns' and tool calls' counters of
 * this process (activities/agent-metrics.ts says who counts them where), and the approvals waiting now across the
 * platform, read from the database at each scrape.
 */
export function agentServiceRegistry(metrics: Metrics, turns: { approvalsWaiting(): Promise<number> }): Registry {
  const approvals = new Registry();
  new Gauge({
    name: 'tessera_agent_approvals_waiting',
    help: 'Tool calls of agent turns waiting for a person to approve or reject them (platform-wide, now)',
    registers: [approvals],
    async collect() {
      this.set(await turns.approvalsWaiting());
    },
  });
  return Registry.merge([metrics.registry, agentActivityRegistry, approvals]);
}

/**
 * The durable capacity queue on `/metrics` (docs/capacity-queue.md), read from the database at each scrape: jobs
 * waiting and holding slots, and the longest wait, by kind, model, priority and plan.
 */
export function registerCapacityGauges(registry: Registry, capacity: { depth(): Promise<QueueDepth[]> }): void {
  const labelNames = ['kind', 'model', 'priority', 'plan'] as const;
  let depth: Promise<QueueDepth[]> | null = null;
  // One query per scrape for the three gauges. The rest of `/metrics` must answer while the database is down (an
  // outage is what an operator scrapes for): then, or when it is slow past a second, the queue's gauges are left out.
  const read = () =>
    (depth ??= Promise.race([
      capacity.depth(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('slow')), 1_000).unref()),
    ])
      .catch(() => [] as QueueDepth[])
      .finally(() => setTimeout(() => (depth = null), 0)));
  const gauge = (name: string, help: string, value: (row: QueueDepth) => number) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        for (const row of await read()) {
          this.set({ kind: row.kind, model: row.model, priority: row.priority, plan: row.plan }, value(row));
        }
      },
    });
  gauge(
    'tessera_capacity_queue_waiting',
    'Jobs waiting in the capacity queue (platform-wide, now)',
    (row) => row.waiting,
  );
  gauge('tessera_capacity_queue_holding', 'Jobs holding a capacity slot (platform-wide, now)', (row) => row.holding);
  gauge(
    'tessera_capacity_queue_oldest_wait_seconds',
    'How long the longest-waiting job of the group has waited (seconds)',
    (row) => row.oldestWaitSeconds,
  );
}

/**
 * The request's id: the `X-Request-Id` it is answered with, set now (`req_…`) when no route set one before (the
 * completion doors name theirs after the completion). The request's log line and trace carry it; an operator's
 * action records it in the audit log, so an entry leads to its request and back.
 */
export function requestIdOf(context: Context): string {
  const existing = context.response.get('X-Request-Id');
  if (existing) return String(existing);
  const id = `req_${randomBytes(12).toString('base64url')}`;
  context.set('X-Request-Id', id);
  return id;
}

/** Logs one line per request with its id, and times it by matched route (not raw path: bounded labels). */
export function requestObserver(logger: Logger, metrics: Metrics): Middleware {
  return async (context, next) => {
    const startedAt = performance.now();
    (context.state as { timing?: ServerTiming }).timing = new ServerTiming();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - startedAt) / 1000;
      const route = (context as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.httpDuration.observe({ method: context.method, route, status: String(context.status) }, seconds);
      logger.info(
        {
          method: context.method,
          path: context.path,
          status: context.status,
          ms: Math.round(seconds * 1000),
          requestId: context.response.get('X-Request-Id') || undefined,
        },
        'request',
      );
    }
  };
}
