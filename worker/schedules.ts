/** Temporal Schedules Tessera relies on, created idempotently at start-up by every API process. */
import type { Duration } from '@temporalio/common';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

/** The credit renewal schedule: hourly, one run at a time, catching up a day of missed runs. */
export async function ensureCreditRenewalSchedule(
  client: Client,
  taskQueue: string,
  every: Duration = '1 hour',
): Promise<void> {
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

/**
 * The sweep of abandoned credit holds (activities/credits/abandoned-holds.ts): every `every`, one run at a time, and
 * one run now, so the holds a crash left behind are released as the platform starts rather than an interval later.
 * A Temporal Schedule rather than a timer in each process: one run per interval however many replicas run, on
 * whichever worker is alive, with its last runs and their results in the Web UI, and pausable like any schedule.
 */
export async function startCreditHoldSweepSchedule(
  client: Client,
  taskQueue: string,
  every: Duration = '1 minute',
): Promise<void> {
  const scheduleId = `tessera-credit-holds-sweep-${taskQueue}`;
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every }] },
      action: { type: 'startWorkflow', workflowType: 'creditHoldsSweep', taskQueue, args: [] },
      // A missed run needs no replay: the next one releases everything that aged meanwhile.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      memo: {
        purpose: 'Releases credit holds whose workflow does not run (CREDIT_HOLD_GRACE, CREDIT_HOLD_SWEEP_INTERVAL)',
      },
    });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  // Even beside a run still open from before a crash (its activity waits out a dead worker's heartbeat): the sweep
  // is idempotent.
  await client.schedule.getHandle(scheduleId).trigger(ScheduleOverlapPolicy.ALLOW_ALL);
}

/** The sweep of expired media files (activities/media/sweep.ts): every `every`, one run at a time, no catching up. */
export async function ensureMediaSweepSchedule(
  client: Client,
  taskQueue: string,
  every: Duration = '1 hour',
): Promise<void> {
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

/** The schedules a deployment on `taskQueue` keeps (what a test platform removes when it closes). */
export const platformScheduleIds = (taskQueue: string) => [
  `tessera-credit-renewals-${taskQueue}`,
  `tessera-credit-holds-sweep-${taskQueue}`,
  mediaSweepScheduleId(taskQueue),
];
