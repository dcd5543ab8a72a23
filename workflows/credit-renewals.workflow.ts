/**
 * creditRenewalsWorkflow: started by the `tessera-credit-renewals` Temporal Schedule. Grants the monthly
 * credits of every account whose cycle ended, and releases reservations nobody will settle. Idempotent, so an
 * overlapping or repeated run changes nothing twice.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

const { renewDueCycles, releaseStaleHolds } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

export async function creditRenewalsWorkflow(): Promise<{ renewed: number; released: number }> {
  const { renewed } = await renewDueCycles();
  const { released } = await releaseStaleHolds();
  return { renewed, released };
}
