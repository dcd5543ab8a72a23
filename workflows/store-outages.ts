/**
 * Waiting out an outage of the platform's own stores in workflow code, for a step whose retry policy the workflow
 * cannot make open-ended (a tool call: its policy allows as many tries as the tool does, one by default). The step's
 * activity throws a store outage as an ApplicationFailure of type `StoreUnavailable` (activities/failures.ts); the
 * workflow sleeps (0.5 s, doubling to 10 s) and runs the step again for as long as the outage lasts. Any other
 * failure is the step's own and is thrown as it was.
 */
import { ActivityFailure, ApplicationFailure, sleep } from '@temporalio/workflow';

export async function waitingOutStoreOutages<T>(step: () => Promise<T>): Promise<T> {
  for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      return await step();
    } catch (error) {
      const cause = error instanceof ActivityFailure ? error.cause : error;
      if (!(cause instanceof ApplicationFailure) || cause.type !== 'StoreUnavailable') throw error;
      await sleep(delayMs);
    }
  }
}
