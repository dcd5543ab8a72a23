/**
 * creditRenewalsWorkflow: started by the `tessera-credit-renewals` Temporal Schedule; grants the monthly
 * credits of every account whose cycle ended. Idempotent, so an overlapping or repeated run grants nothing twice.
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
