/**
 * The durable capacity queue (docs/capacity-queue.md): what a job that nobody waits on asks for before it calls a
 * model, and what it is told. Workflow-safe types and rules shared by api, workflows and activities.
 *
 * Order: by the account's plan (business, pro, starter, free), then the job's priority (high, normal, low), then first
 * come first served. No starvation: every `aging` seconds a job waits counts as one step of priority more, so a low
 * job of a free account that has waited long enough goes before a new high one of a business account.
 */
import { planNames, type PlanName } from './plans.ts';

export const capacityPriorities = ['low', 'normal', 'high'] as const;
export type CapacityPriority = (typeof capacityPriorities)[number];

/** A job's priority from OpenAI's `service_tier` (`priority` high, `flex` low, anything else normal). */
export function priorityOfServiceTier(tier: string | null | undefined): CapacityPriority {
  if (tier === 'priority') return 'high';
  if (tier === 'flex') return 'low';
  return 'normal';
}

/** The order's first key: a plan's rank (free 0 … business 3). */
export function planRank(plan: PlanName): number {
  return planNames.indexOf(plan);
}

export interface CapacityRequest {
  /** Who holds the slot once granted: the job's workflow id (one slot per job). */
  holder: string;
  userId: string;
  /** The catalogue model the job calls (`auto` when the router chooses). */
  model: string;
  /** What the job is (`response`, …): the metrics' and the console's label. */
  kind: string;
  priority: CapacityPriority;
}

export type CapacityAnswer =
  /** `probe`: the model was saturated, and this job is the one to try it (its answer clears the mark). */
  | { granted: true; probe?: boolean }
  | {
      granted: false;
      /** 1 = next. Among the jobs of the same account, or of the same saturated model when that is what it waits on. */
      position: number;
      /** What it waits for. */
      reason: 'account' | 'model';
    };
