/**
 * scheduledRun: one firing of a scheduled task (started by its Temporal Schedule `schedule-<task id>`, which skips a
 * firing while the previous run is still going and catches up missed firings within its catch-up window).
 *
 * 1. `prepareScheduledTurn` (on the agent service's task queue: its process holds the agent catalogue and the chat
 *    preparation the API uses) reads the task and prepares the turn of the task's session for its owner, holding
 *    the turn's credits: a refusal (no credits, agent gone) is recorded on the task and fails the run.
 * 2. The turn runs as a child workflow (`chatTurn`, id = the turn id), as a messaging app's turn does.
 * 3. The outcome is recorded on the task row (`last_run`), and the answer is sent to each messaging app chat linked
 *    to the owner's account (`ConversationStore.linkedChats`, as team broadcasts reach them), by the messengers'
 *    activity keyed by the turn and the chat: sent once.
 * Steps 2 and 3's running and sending are the one path every unattended agent run takes (agent-run.ts).
 */
import { ApplicationFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { PreparedScheduledRun, ScheduledRunInput, ScheduledRunRecord } from '../common/schedules.ts';
import { scheduledDeliveryId } from '../common/schedules.ts';
import { deliverToChats, runAgentTurn } from './agent-run.ts';

/** The activities the agent service serves on its own task queue (api/services/schedules/activities.ts). */
export interface ScheduleActivities {
  prepareScheduledTurn(input: { taskId: string; runId: string }): Promise<PreparedScheduledRun>;
  recordScheduledRun(record: ScheduledRunRecord): Promise<void>;
}

export async function scheduledRun(input: ScheduledRunInput): Promise<{ status: string; turnId: string | null }> {
  const { prepareScheduledTurn, recordScheduledRun } = proxyActivities<ScheduleActivities>({
    taskQueue: input.agentsTaskQueue,
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
  });
  // The run's time, as the listing shows it: when it started (the firing, or its catch-up).
  const at = new Date().toISOString();
  const prepared = await prepareScheduledTurn({ taskId: input.taskId, runId: workflowInfo().workflowId });
  if (prepared.kind === 'skipped') return { status: 'skipped', turnId: null };
  if (prepared.kind === 'refused') {
    await recordScheduledRun({
      taskId: input.taskId,
      status: 'failed',
      at,
      turnId: prepared.turnId,
      error: `${prepared.errorType}: ${prepared.message}`,
    });
    throw ApplicationFailure.nonRetryable(prepared.message, prepared.errorType);
  }
  const { turn } = prepared;
  await recordScheduledRun({ taskId: input.taskId, status: 'running', at, turnId: turn.turnId });
  const outcome = await runAgentTurn(
    turn,
    `Scheduled task ${input.taskId}: turn ${turn.turn} of ${turn.sessionKey} (${prepared.agentName})`,
    'scheduled-run',
  );
  if (!outcome.ok) {
    await recordScheduledRun({
      taskId: input.taskId,
      status: 'failed',
      at,
      turnId: turn.turnId,
      error: outcome.errorType ? `${outcome.errorType}: ${outcome.message}` : outcome.message,
    });
    throw ApplicationFailure.nonRetryable(
      `The scheduled turn ${turn.turnId} failed: ${outcome.message}`,
      'ScheduledRunFailed',
    );
  }
  await recordScheduledRun({ taskId: input.taskId, status: 'done', at, turnId: turn.turnId });
  await deliverToChats(prepared.deliverTo, (chat) => scheduledDeliveryId(turn.turnId, chat), outcome.text);
  return { status: 'done', turnId: turn.turnId };
}
