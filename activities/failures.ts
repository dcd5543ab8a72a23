/**
 * How an activity whose own failures are final hands an unexpected error to its workflow's retry policy
 * (`untilStoresAnswer`, common/retry-policies.ts): an outage of the platform's own stores (its database, or the
 * media store, unreachable: `isStoreOutage`) is retryable, type `StoreUnavailable`, so the workflow waits it out and
 * the request's outcome is never decided by the platform's own outage; a Temporal failure (a cancellation, an
 * ApplicationFailure the activity built) stays as it is; anything else ends the step, non-retryably, as before.
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { isStoreOutage } from '../db/errors.ts';

export function asActivityFailure(error: unknown): unknown {
  if (error instanceof TemporalFailure) return error;
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? error : undefined;
  if (isStoreOutage(error)) {
    return ApplicationFailure.create({
      type: 'StoreUnavailable',
      message: `a store of the platform is unavailable: ${message}`,
      cause,
    });
  }
  return ApplicationFailure.create({ type: cause?.name ?? 'Error', message, nonRetryable: true, cause });
}

/**
 * Runs an activity's body, its store outages thrown as the retryable `StoreUnavailable` and every other error as it
 * was: for an activity whose retries its workflow decides (a tool call, whose policy allows as many tries as the tool
 * does; the workflow waits a store outage out: workflows/store-outages.ts).
 */
export async function storeOutagesAsFailures<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof TemporalFailure || !isStoreOutage(error)) throw error;
    throw asActivityFailure(error);
  }
}

/** Runs an activity's body, its unexpected errors handed over as `asActivityFailure` says. */
export async function failingAsActivity<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asActivityFailure(error);
  }
}
