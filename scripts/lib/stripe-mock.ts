/**
 * stripe-mock (https://github.com/stripe/stripe-mock): Stripe's own mock of its HTTP API, generated from the
 * OpenAPI spec. It validates requests and answers with fixture objects; it keeps no state (a created customer
 * is not retrievable later, every list answers the same fixture). Tests point the gateway's Stripe client at
 * it through STRIPE_API_BASE.
 *
 * Located like the Temporal CLI: `STRIPE_MOCK_PATH` (must exist) → the cache
 * `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/stripe-mock` → `go install github.com/stripe/stripe-mock@v…` into that
 * cache directory, once, under a lock file shared by concurrent callers.
 */
import { startChildServer } from './child-server.ts';
import { ensureGoBinary } from './go-binary.ts';

/** Pinned for reproducible runs (what `@latest` resolved to when billing was added). */
export const stripeMockVersion = '0.203.0';
export const stripeMockModule = `github.com/stripe/stripe-mock@v${stripeMockVersion}`;

/** Returns the path of a stripe-mock binary, building it with `go install` on first use. */
export function ensureStripeMock(log: (line: string) => void = () => {}): Promise<string> {
  return ensureGoBinary(
    { module: stripeMockModule, binary: 'stripe-mock', label: 'stripe-mock', overrideVariable: 'STRIPE_MOCK_PATH' },
    log,
  );
}

export interface RunningStripeMock {
  /** Base URL of its HTTP listener, e.g. `http://127.0.0.1:12111`: the value for STRIPE_API_BASE. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts stripe-mock on 127.0.0.1 (`port` 0, the default, lets the system choose) and resolves once it
 * listens. Its HTTPS listener (always on) is bound to a system-chosen loopback port too, so runs never collide.
 */
export async function startStripeMock(
  options: { port?: number; log?: (line: string) => void; startTimeoutMs?: number } = {},
): Promise<RunningStripeMock> {
  const log = options.log ?? (() => {});
  const binary = await ensureStripeMock(log);
  return startChildServer(binary, ['-http-addr', `127.0.0.1:${options.port ?? 0}`, '-https-addr', '127.0.0.1:0'], {
    label: 'stripe-mock',
    portPattern: /Listening for HTTP at address: \S+:(\d+)/,
    startTimeoutMs: options.startTimeoutMs,
  });
}
