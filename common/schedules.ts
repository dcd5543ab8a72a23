/**
 * Scheduled tasks (spec 4.5) as the workflow, the activities and the API share them. Workflow-safe: no zod, no I/O.
 * A task `tsk_…` fires through the Temporal Schedule `schedule-<task id>`, whose action starts `scheduledRun` with a
 * `ScheduledRunInput`; each run is a turn of the task's own session `schedule:<task id>`, owned by the task's owner.
 */
import type { MessengerTarget } from './messengers.ts';
import { runDeliveryId, type PreparedAgentTurn, type RefusedAgentTurn } from './agent-runs.ts';

export const schedulePrefix = 'schedule-';

export function scheduleIdOf(taskId: string): string {
  return `${schedulePrefix}${taskId}`;
}

export function taskSessionKey(taskId: string): string {
  return `schedule:${taskId}`;
}

/**
 * The task queue of the activities only the agent service serves (its process holds the agent catalogue and the
 * chat preparation): `<task queue>-agents`.
 */
export function agentsTaskQueue(taskQueue: string): string {
  return `${taskQueue}-agents`;
}

/** The send of a run's answer to one linked chat: its `messenger_events` row and idempotency key (sent once). */
export function scheduledDeliveryId(turnId: string, chat: MessengerTarget): string {
  return runDeliveryId('schedule', turnId, chat);
}

export interface ScheduledRunInput {
  taskId: string;
  /** Where `prepareScheduledTurn` and `recordScheduledRun` run (`agentsTaskQueue`). */
  agentsTaskQueue: string;
}

export type PreparedScheduledRun =
  /** The task is gone or paused since the schedule fired: nothing runs. */
  | { kind: 'skipped'; reason: string }
  /** The turn was refused before it started (no credits, agent gone, model not in the plan): the run failed. */
  | RefusedAgentTurn
  /** The turn, ready to run as a child workflow, and the owner's linked messaging app chats its answer also goes to. */
  | PreparedAgentTurn;

export type ScheduledRunStatus = 'running' | 'done' | 'failed';

export interface ScheduledRunRecord {
  taskId: string;
  status: ScheduledRunStatus;
  at: string;
  turnId: string | null;
  error?: string;
}
