/**
 * The sweep of abandoned credit holds, run by the `creditHoldsSweep` workflow that the `tessera-credit-holds-sweep`
 * Temporal Schedule starts every `CREDIT_HOLD_SWEEP_INTERVAL` (default 1 minute) and every API process triggers once
 * at start (worker/schedules.ts).
 *
 * Every hold is settled or released by the saga of the workflow its key names (`<workflow id>#<attempt>`: a
 * completion, a chat or agent turn, a media job). A hold whose workflow does not run will never be: the API process
 * that held the credits died before starting the workflow (Temporal answers not found), or the workflow ended
 * without closing it (terminated, timed out). Workflow ids are deterministic, so Temporal is asked about each hold
 * older than `CREDIT_HOLD_GRACE` (default 1 minute, longer than holding credits and starting the workflow take), and
 * the hold is released unless its workflow is running. A running workflow's hold is left to its saga however old
 * (a long video job holds its price until it ends).
 *
 * Cost: with nothing aged, one index scan of the open holds (`credit_holds`) and nothing else. Temporal is asked
 * once per workflow, a few at a time. Idempotent: the ledger's release is keyed, so an overlapping run, or a saga
 * closing the hold meanwhile, changes nothing twice.
 *
 * A workflow that still starts after its hold was released (one started as a child by a parent that was down past
 * the grace, or a request repeated with its Idempotency-Key) is charged when it settles, without a hold to lift.
 */
import { heartbeat } from '../heartbeat.ts';
import type { CreditLedger, OpenHold } from './credit-ledger.ts';
import type { CapacityQueue } from '../capacity/capacity-queue.ts';

export interface AbandonedHoldDependencies {
  ledger: CreditLedger;
  /** Whether the workflow runs (false when it closed, or never started). */
  isRunning(workflowId: string): Promise<boolean>;
  /** How old a hold must be before its workflow is asked about. */
  creditHoldGraceMs: number;
  /** The capacity queue: a job's place or slot is a hold too, and goes when its workflow no longer runs. */
  capacity?: Pick<CapacityQueue, 'aged' | 'release'>;
}

/** Holds read per page. */
const pageSize = 500;
/** Temporal is asked about this many workflows at once. */
const concurrency = 16;

export function createAbandonedHoldActivities(dependencies: AbandonedHoldDependencies) {
  const { ledger, isRunning, creditHoldGraceMs } = dependencies;
  return {
    /** Releases every aged hold whose workflow does not run; answers how many workflows were asked about and released. */
    async releaseAbandonedHolds(): Promise<{ workflows: number; released: number }> {
      let workflows = 0;
      let released = 0;
      let afterKey = '';
      for (;;) {
        const page = await ledger.agedHolds(creditHoldGraceMs, pageSize, afterKey);
        if (page.length === 0) break;
        afterKey = page.at(-1)!.key;
        // One question per workflow, however many of its attempts hold credits.
        const byWorkflow = Map.groupBy(page, (hold: OpenHold) => hold.workflowId);
        const ids = [...byWorkflow.keys()];
        for (let start = 0; start < ids.length; start += concurrency) {
          await Promise.all(
            ids.slice(start, start + concurrency).map(async (workflowId) => {
              // A batch's line holds under `batch-<id>/<line>`: the batch's workflow settles it (common/batches.ts).
              if (await isRunning(workflowId.split('/')[0]!)) return;
              for (const hold of byWorkflow.get(workflowId)!) if (await ledger.release(hold)) released++;
            }),
          );
        }
        workflows += ids.length;
        heartbeat({ workflows, released });
        if (page.length < pageSize) break;
      }
      // Places and slots in the capacity queue whose job's workflow ended without giving them back (terminated).
      const holders = (await dependencies.capacity?.aged(creditHoldGraceMs)) ?? [];
      for (let start = 0; start < holders.length; start += concurrency) {
        await Promise.all(
          holders.slice(start, start + concurrency).map(async (holder) => {
            if (await isRunning(holder)) return;
            await dependencies.capacity!.release(holder);
            released++;
          }),
        );
      }
      return { workflows: workflows + holders.length, released };
    },
  };
}

export type AbandonedHoldActivities = ReturnType<typeof createAbandonedHoldActivities>;
