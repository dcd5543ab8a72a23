/**
 * The one path of an agent run for an owner that nobody watches in a browser (common/agent-runs.ts): the prepared
 * turn runs as a child `chatTurn` (id = the turn id, so the conversation's turn order and the turn's own history are
 * those of any other turn), and its answer goes to messaging app chats through the messengers' activity, keyed once
 * per run and chat. Used by scheduled runs (scheduled-run.workflow.ts) and inbound webhook runs
 * (webhook-run.workflow.ts). Workflow code: deterministic, imported by workflows only.
 */
import { ApplicationFailure, ChildWorkflowFailure, executeChild, patched, proxyActivities } from '@temporalio/workflow';
import type { createMessengerActivities } from '../activities/messengers/messenger-activities.ts';
import type { MessengerTarget } from '../common/messengers.ts';
import type { ChatTurnInput } from '../common/chat-turn.ts';
import { kindKey, modelKey, userKey } from '../common/search-attributes.ts';
import type { chatTurn } from './chat-turn.workflow.ts';
import { releaseCapacity, waitForCapacity } from './capacity.ts';

const { sendMessengerText } = proxyActivities<ReturnType<typeof createMessengerActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

export type TurnOutcome =
  | { ok: true; text: string }
  /** The turn failed (its error is in its own history); `errorType` is its failure's type when it has one. */
  | { ok: false; message: string; errorType: string | null };

/**
 * Runs the prepared turn as a child workflow, waiting for it (approvals included): its answer, or why it failed. The
 * turn first waits for a slot of its owner's in the capacity queue (docs/capacity-queue.md: `kind` names the run), and
 * gives it back when it ends; runs from before the queue (no marker in their history) go straight on.
 */
export async function runAgentTurn(
  turn: ChatTurnInput,
  summary: string,
  kind: 'scheduled-run' | 'webhook-run',
): Promise<TurnOutcome> {
  const queued = patched('capacity-queue');
  if (queued) {
    const slot = {
      holder: turn.turnId,
      userId: turn.userId,
      model: turn.requestedModel,
      kind,
      priority: 'normal' as const,
    };
    await waitForCapacity(slot, { stop: () => false });
  }
  try {
    const result = await executeChild<typeof chatTurn>('chatTurn', {
      workflowId: turn.turnId,
      args: [turn],
      typedSearchAttributes: [
        { key: kindKey, value: 'agent-turn' },
        { key: userKey, value: turn.userId },
        { key: modelKey, value: turn.requestedModel },
      ],
      staticSummary: summary,
    });
    return { ok: true, text: result.response };
  } catch (error) {
    const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
    const failure = cause instanceof ApplicationFailure ? cause : null;
    const message = failure?.message ?? (cause instanceof Error ? cause.message : 'an internal error');
    return { ok: false, message, errorType: failure?.type ?? null };
  } finally {
    if (queued) await releaseCapacity({ holder: turn.turnId });
  }
}

/** Sends `text` to each chat, in order, each send keyed by `deliveryIdOf(chat)` (its row was made when prepared). */
export async function deliverToChats(
  chats: MessengerTarget[],
  deliveryIdOf: (chat: MessengerTarget) => string,
  text: string,
): Promise<void> {
  if (!text) return;
  for (const chat of chats) await sendMessengerText({ ...chat, eventId: deliveryIdOf(chat), text });
}
