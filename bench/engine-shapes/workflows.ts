/**
 * The two shapes `npm run bench:engine` compares (bench/engine-shapes.ts), each doing the same work per request:
 * one local activity, as a completion's attempt is.
 *
 * - `perRequest`: one workflow execution per request (how completions run today).
 * - `lane`: a long-lived workflow that serves requests as updates (`serve`), each running the same local activity; it
 *   continues as new after `laneRunLength` requests, once no update is in flight, so its history stays short.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';

export interface EngineActivities {
  /** The request's work: waits the upstream's latency, then hands the answer to the waiting request (in-process). */
  answer(id: string): Promise<string>;
}

const { answer } = proxyLocalActivities<EngineActivities>({ startToCloseTimeout: '1 minute' });

export async function perRequest(id: string): Promise<string> {
  return answer(id);
}

export const serveUpdate = defineUpdate<string, [string]>('serve');

/** Requests a lane's run serves before it continues as new. */
export const laneRunLength = 500;

export async function lane(): Promise<void> {
  let served = 0;
  setHandler(serveUpdate, async (id) => {
    served++;
    return answer(id);
  });
  await condition(() => served >= laneRunLength && allHandlersFinished());
  await continueAsNew<typeof lane>();
}
