/**
 * creditRenewalsWorkflow: started by the `tessera-credit-renewals` Temporal Schedule. Grants the monthly credits of
 * every account whose cycle ended. Idempotent, so an overlapping or repeated run changes nothing twice. (Holds nobody
 * will settle are released every minute by `creditHoldsSweep` instead.)
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

const { renewDueCycles } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

export async function creditRenewalsWorkflow(): Promise<{ renewed: number }> {
  return renewDueCycles();
}
