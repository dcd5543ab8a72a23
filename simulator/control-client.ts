/** A typed client for the simulator's control API, for tests and benchmarks. */
import type { FaultRule } from './faults.ts';
import type { RequestSummary } from './request-log.ts';
import type { RateLimitSettings } from './rate-limits.ts';

export interface SimulatorControl {
  /** Registers a fault rule; the first rule matching a request applies to it. */
  addFault(rule: FaultRule): Promise<{ id: string }>;
  clearFaults(): Promise<void>;
  /** Gives protocols a request limit per window (simulator/rate-limits.ts), replacing any set before. */
  setRateLimits(limits: RateLimitSettings): Promise<void>;
  clearRateLimits(): Promise<void>;
  /**
   * Requests received since the last reset: the total, per model, and the last one in full; `rate_limited`, those
   * answered 429 by a rate limit.
   */
  requests(): Promise<RequestSummary & { rate_limited: number }>;
  resetRequests(): Promise<void>;
}

/** Creates a control client for the simulator at `url` (its base URL, as `startSimulator` returns it). */
export function simulatorControl(url: string): SimulatorControl {
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${url.replace(/\/+$/, '')}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`simulator control ${method} ${path} failed: ${response.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  return {
    addFault: async (rule) => (await call('POST', '/_simulator/faults', rule)) as { id: string },
    clearFaults: async () => {
      await call('DELETE', '/_simulator/faults');
    },
    setRateLimits: async (limits) => {
      await call('PUT', '/_simulator/rate-limits', { limits });
    },
    clearRateLimits: async () => {
      await call('DELETE', '/_simulator/rate-limits');
    },
    requests: async () => (await call('GET', '/_simulator/requests')) as RequestSummary & { rate_limited: number },
    resetRequests: async () => {
      await call('DELETE', '/_simulator/requests');
    },
  };
}
