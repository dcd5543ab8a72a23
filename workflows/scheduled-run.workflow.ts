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
 */
import {
  ApplicationFailure,
  ChildWorkflowFailure,
  executeChild,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { createMessengerActivities } from '../activities/messengers/messenger-activities.ts';
import type { PreparedScheduledRun, ScheduledRunInput, ScheduledRunRecord } from '../common/schedules.ts';
import { scheduledDeliveryId } from '../common/schedules.ts';
import { kindKey, modelKey, userKey } from '../common/search-attributes.ts';
import type { chatTurn } from './chat-turn.workflow.ts';

/** The activities the agent service serves on its own task queue (api/services/schedules/activities.ts). */
export interface ScheduleActivities {
  prepareScheduledTurn(input: { taskId: string; runId: string }): Promise<PreparedScheduledRun>;
  recordScheduledRun(record: ScheduledRunRecord): Promise<void>;
}

const { sendMessengerText } = proxyActivities<ReturnType<typeof createMessengerActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

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
  let text: string;
  try {
    const result = await executeChild<typeof chatTurn>('chatTurn', {
      workflowId: turn.turnId,
      args: [turn],
      typedSearchAttributes: [
        { key: kindKey, value: 'agent-turn' },
        { key: userKey, value: turn.userId },
        { key: modelKey, value: turn.requestedModel },
      ],
      staticSummary: `Scheduled task ${input.taskId}: turn ${turn.turn} of ${turn.sessionKey} (${prepared.agentName})`,
    });
    text = result.response;
  } catch (error) {
    const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
    const failure = cause instanceof ApplicationFailure ? cause : null;
    const message = failure?.message ?? (cause instanceof Error ? cause.message : 'an internal error');
    await recordScheduledRun({
      taskId: input.taskId,
      status: 'failed',
      at,
      turnId: turn.turnId,
      error: failure?.type ? `${failure.type}: ${message}` : message,
    });
    throw ApplicationFailure.nonRetryable(`The scheduled turn ${turn.turnId} failed: ${message}`, 'ScheduledRunFailed');
  }
  await recordScheduledRun({ taskId: input.taskId, status: 'done', at, turnId: turn.turnId });
  if (text) {
    for (const chat of prepared.deliverTo) {
      await sendMessengerText({ ...chat, eventId: scheduledDeliveryId(turn.turnId, chat), text });
    }
  }
  return { status: 'done', turnId: turn.turnId };
}
