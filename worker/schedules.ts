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

/** The sweep of expired media files (activities/media/sweep.ts): every `every`, one run at a time, no catching up. */
export async function ensureMediaSweepSchedule(client: Client, taskQueue: string, every = '1 hour'): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: mediaSweepScheduleId(taskQueue),
      spec: { intervals: [{ every }] },
      action: { type: 'startWorkflow', workflowType: 'mediaFilesSweep', taskQueue, args: [] },
      // A missed run needs no replay: the next one deletes everything that expired meanwhile.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      memo: { purpose: 'Deletes media files older than MEDIA_FILE_TTL_DAYS and marks their jobs expired' },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}

export const mediaSweepScheduleId = (taskQueue: string) => `tessera-media-sweep-${taskQueue}`;
