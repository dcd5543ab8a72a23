/**
 * Timing spans for one gateway request at a time (concurrency 1), taken by wrapping the gateway's own classes
 * and the upstream fetch from the outside; nothing in the product is modified. Each request gets a timeline of
 * marks, whose gaps say where the added latency goes.
 */
import { WorkflowClient } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import pg from 'pg';
import { ApiKeyService } from '../api/routes/apikeys/service.ts';
import { CompletionService } from '../api/routes/completions/service.ts';
import { percentile } from './load.ts';

type Marks = Record<string, number>;

let current: Marks | null = null;

const mark = (name: string) => {
  if (current && current[name] === undefined) current[name] = performance.now();
};

/** Starts a timeline for the next request (call only when one request is in flight). */
export function beginTrace(): Marks {
  current = {};
  return current;
}

export function endTrace(): void {
  current = null;
}

let fetchSpyInstalled = false;

/**
 * Wraps the global fetch the provider adapters capture when they are first built, so it must run before the
 * gateway serves its first completion. While no trace is open it hands the call straight through.
 */
export function installFetchSpy(simulatorUrlPrefix: () => string | undefined): void {
  if (fetchSpyInstalled) return;
  fetchSpyInstalled = true;
  const originalFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const marks = current;
    const prefix = simulatorUrlPrefix();
    if (!marks || prefix === undefined) return originalFetch(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(prefix)) return originalFetch(input, init);
    marks['upstream.start'] ??= performance.now();
    return originalFetch(input, init).then((response) => {
      marks['upstream.headers'] ??= performance.now();
      const text = response.text.bind(response);
      Object.defineProperty(response, 'text', {
        value: async () => {
          try {
            return await text();
          } finally {
            marks['upstream.end'] ??= performance.now();
          }
        },
      });
      return response;
    });
  };
}

/** Wraps the gateway's authentication and workflow start/result while `run` runs, then restores them. */
export async function withSpans<T>(run: () => Promise<T>): Promise<T> {
  const authenticate = ApiKeyService.prototype.authenticate;
  const startCompletion = CompletionService.prototype.start;
  const startWorkflow = WorkflowClient.prototype.start;
  const answer = CompletionService.prototype.answer;

  ApiKeyService.prototype.authenticate = async function (this: ApiKeyService, secret: string) {
    mark('auth.start');
    try {
      return await authenticate.call(this, secret);
    } finally {
      mark('auth.end');
    }
  };
  CompletionService.prototype.start = async function (this: CompletionService, ...args) {
    mark('service.start');
    return startCompletion.apply(this, args);
  };
  WorkflowClient.prototype.start = async function (this: WorkflowClient, ...args: Parameters<typeof startWorkflow>) {
    mark('wfstart.start');
    try {
      return await startWorkflow.apply(this, args);
    } finally {
      mark('wfstart.end');
    }
  } as typeof startWorkflow;
  CompletionService.prototype.answer = async function (this: CompletionService, ...args: Parameters<typeof answer>) {
    const marks = current;
    try {
      return await answer.apply(this, args);
    } finally {
      if (marks && marks['answer.end'] === undefined) marks['answer.end'] = performance.now();
    }
  };
  try {
    return await run();
  } finally {
    ApiKeyService.prototype.authenticate = authenticate;
    CompletionService.prototype.start = startCompletion;
    WorkflowClient.prototype.start = startWorkflow;
    CompletionService.prototype.answer = answer;
    endTrace();
  }
}

/**
 * The stages of a gateway request and the marks that bound them. Attempt 1's upstream call runs alongside
 * the StartWorkflowExecution RPC (its two rows overlap); the answer is handed over once both are done.
 */
export const stages: Array<{ name: string; from: string; to: string }> = [
  { name: 'HTTP in, Koa, body parser, routing', from: 'client.start', to: 'auth.start' },
  { name: 'API-key lookup (PostgreSQL)', from: 'auth.start', to: 'auth.end' },
  { name: 'validation, planning, service prep', from: 'auth.end', to: 'wfstart.start' },
  { name: 'StartWorkflowExecution RPC (eager)', from: 'wfstart.start', to: 'wfstart.end' },
  { name: '(overlapping) upstream call, speculative attempt 1', from: 'upstream.start', to: 'upstream.end' },
  { name: 'start returned → answer handed over', from: 'wfstart.end', to: 'answer.end' },
  { name: 'presenting, HTTP out, client read', from: 'answer.end', to: 'client.end' },
];

export interface StageSummary {
  name: string;
  p50: number;
  p99: number;
  mean: number;
}

export function summarizeStages(traces: Marks[]): StageSummary[] {
  const complete = traces.filter((marks) => stages.every((stage) => marks[stage.from] && marks[stage.to]));
  const rows = stages.map((stage) => {
    const values = complete.map((marks) => marks[stage.to]! - marks[stage.from]!);
    return {
      name: stage.name,
      p50: percentile(values, 50),
      p99: percentile(values, 99),
      mean: values.reduce((a, b) => a + b, 0) / Math.max(1, values.length),
    };
  });
  const totals = complete.map((marks) => marks['client.end']! - marks['client.start']!);
  rows.push({
    name: `**total (n=${complete.length})**`,
    p50: percentile(totals, 50),
    p99: percentile(totals, 99),
    mean: totals.reduce((a, b) => a + b, 0) / Math.max(1, totals.length),
  });
  return rows;
}

/** Round trips of the bare dependencies: a no-op Temporal RPC and a `select 1`, sequentially. */
export async function baselineRoundTrips(
  temporalAddress: string,
  databaseUrl: string,
  count: number,
): Promise<{ temporal: StageSummary; postgres: StageSummary }> {
  const connection = await NativeConnection.connect({ address: temporalAddress });
  const temporal: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const startedAt = performance.now();
      await connection.workflowService.getSystemInfo({});
      temporal.push(performance.now() - startedAt);
    }
  } finally {
    await connection.close();
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const postgres: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const startedAt = performance.now();
      await client.query('select 1');
      postgres.push(performance.now() - startedAt);
    }
  } finally {
    await client.end();
  }
  const summary = (name: string, values: number[]): StageSummary => ({
    name,
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    mean: values.reduce((a, b) => a + b, 0) / Math.max(1, values.length),
  });
  return {
    temporal: summary('Temporal GetSystemInfo RPC (no-op, native connection)', temporal),
    postgres: summary('PostgreSQL `select 1` (pg client)', postgres),
  };
}
