/** Temporal Schedules Tessera relies on, created idempotently at start-up by every API process. */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

/** The credit renewal schedule: hourly, one run at a time, catching up a day of missed runs. */
export async function ensureCreditRenewalSchedule(client: Client, taskQueue: string, every = '1 hour'): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: `tessera-credit-renewals-${taskQueue}`,
      spec: { intervals: [{ every }] },
      action: { type: 'startWorkflow', workflowType: 'creditRenewalsWorkflow', taskQueue, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' },
      memo: { purpose: 'Grants monthly credits to accounts not billed through Stripe' },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}
