/**
 * Waiting for capacity, in a job's workflow (activities/capacity/capacity-queue.ts, docs/capacity-queue.md): ask for a
 * slot, and until one is granted wait durably (a timer: 1 s, growing to 5 s; a restart of every process loses no
 * place, the row is the place) and ask again. The slot is given back when the job ends, or handed back to wait again
 * when the job finds its model saturated.
 */
import { condition, proxyLocalActivities } from '@temporalio/workflow';
import type { CapacityActivities } from '../activities/capacity/capacity-queue.ts';
import type { CapacityRequest } from '../common/capacity.ts';

// The queue's steps are idempotent writes: retried until the database answers (an outage is waited out).
const capacity = proxyLocalActivities<CapacityActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export const { releaseCapacity, modelSaturated, modelServed } = capacity;

/**
 * Waits until the job holds a slot (`granted`, or `probe` when it is the one to try a saturated model: it reports its
 * answer with `modelServed`), or until `stop` says to give up (false: `stop` became true, or `deadline`, epoch ms,
 * passed). `waiting` hears the job's place each time it is asked.
 */
export async function waitForCapacity(
  request: CapacityRequest,
  options: { stop: () => boolean; deadline?: number; waiting?: (position: number) => Promise<void> | void },
): Promise<'granted' | 'probe' | false> {
  for (let round = 0; ; round++) {
    const answer = await capacity.acquireCapacity(request);
    if (answer.granted) return answer.probe ? 'probe' : 'granted';
    await options.waiting?.(answer.position);
    const pause = Math.min(5_000, 1_000 + round * 500);
    const left = options.deadline === undefined ? pause : Math.min(pause, options.deadline - Date.now());
    if (left <= 0 || (await condition(options.stop, left))) {
      await capacity.releaseCapacity({ holder: request.holder });
      return false;
    }
  }
}
