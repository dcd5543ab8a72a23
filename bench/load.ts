/** Closed-loop load: N clients issuing requests back to back, bounded by a request count and a deadline. */
import type { Sample } from './http-client.ts';

export interface LoadOptions {
  concurrency: number;
  /** Stop issuing after this many requests (Infinity with a duration). */
  requests: number;
  /** Stop issuing after this long; also the safety bound of a count-limited run. */
  maxMs: number;
}

export interface LoadResult {
  samples: Sample[];
  errors: number;
  elapsedMs: number;
  /** True when the deadline, not the request count, ended the run. */
  cutShort: boolean;
}

export async function runLoad(options: LoadOptions, call: () => Promise<Sample>): Promise<LoadResult> {
  const samples: Sample[] = [];
  let errors = 0;
  let issued = 0;
  const startedAt = performance.now();
  const deadline = startedAt + options.maxMs;
  const client = async () => {
    while (issued < options.requests && performance.now() < deadline) {
      issued += 1;
      const sample = await call();
      if (sample.ok) samples.push(sample);
      else errors += 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  const elapsedMs = performance.now() - startedAt;
  return { samples, errors, elapsedMs, cutShort: Number.isFinite(options.requests) && issued < options.requests };
}

/** The p-th percentile (0..100) by nearest rank; NaN for no values. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface Summary {
  n: number;
  errors: number;
  p50: number;
  p99: number;
  mean: number;
  perSecond: number;
}

export function summarize(result: LoadResult, pick: (sample: Sample) => number | undefined): Summary {
  const values = result.samples.map(pick).filter((value): value is number => value !== undefined);
  return {
    n: values.length,
    errors: result.errors,
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    mean: values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length),
    perSecond: result.samples.length / (result.elapsedMs / 1000),
  };
}
