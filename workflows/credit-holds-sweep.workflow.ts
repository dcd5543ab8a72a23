/**
 * creditHoldsSweep: started by the `tessera-credit-holds-sweep` Temporal Schedule (worker/schedules.ts) every
 * `CREDIT_HOLD_SWEEP_INTERVAL`, and once by every API process at start. One activity releases the holds whose
 * workflow does not run (activities/credits/abandoned-holds.ts); it heartbeats per page, so a long backlog runs as
 * long as it needs and a dead worker's sweep is retried elsewhere. Idempotent.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { AbandonedHoldActivities } from '../activities/credits/abandoned-holds.ts';

const { releaseAbandonedHolds } = proxyActivities<AbandonedHoldActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  // The next scheduled run retries anyway: a failing sweep (Temporal or the database away) gives up rather than pile up.
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 3 },
});

export async function creditHoldsSweep(): Promise<{ workflows: number; released: number }> {
  return releaseAbandonedHolds();
}
