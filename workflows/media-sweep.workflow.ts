/**
 * mediaFilesSweep: started by the `tessera-media-sweep` Temporal Schedule (worker/schedules.ts). One activity deletes
 * the expired media files and marks their jobs expired (activities/media/sweep.ts); it heartbeats while it deletes, so
 * a sweep of many files runs as long as it needs and a dead worker's sweep is retried elsewhere. Idempotent.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { MediaSweepActivities } from '../activities/media/sweep.ts';

const { sweepMediaFiles } = proxyActivities<MediaSweepActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '5s', maximumInterval: '5 minutes', maximumAttempts: 5 },
});

export async function mediaFilesSweep(): Promise<{ deletedFiles: number; expiredJobs: number }> {
  return sweepMediaFiles();
}
