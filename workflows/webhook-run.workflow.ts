/**
 * webhookRun: one accepted inbound webhook delivery (a Standard Webhooks delivery, a GitHub event, a Slack event, an
 * automation trigger), workflow id = the run's id `webhook-<agent>-<delivery id>` (common/webhooks.ts), so a
 * redelivered delivery finds this run and nothing runs twice. The route only verified, recorded and started it; the
 * rest is here, each step durable:
 *
 * 1. `prepareWebhookRun` (on the agent service's task queue, like a scheduled run's preparation: its process holds
 *    the agent catalogue and the API's chat preparation) reads the run's row and prepares the owner's turn, or a
 *    reply that needs no model (a Slack chat's link command, a refusal).
 * 2. The turn runs as a child `chatTurn` and its answer goes to the chats the run names (the Slack thread, the
 *    owner's linked chats when the webhook forwards) by the one path every unattended run takes (agent-run.ts). A
 *    tool that needs approval (github_comment) makes the turn wait for the owner's decision, up to its deadline.
 * 3. The outcome is recorded on the row (status, answer or error); an automation run whose caller stopped waiting
 *    gets its signed callback (`deliverWebhookRunCallback`, retried with backoff, given up on after its attempts).
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import { runDeliveryId } from '../common/agent-runs.ts';
import type { PreparedWebhookRun, WebhookRunInput, WebhookRunRecord } from '../common/webhooks.ts';
import { deliverToChats, runAgentTurn } from './agent-run.ts';

/** The activities the agent service serves on its own task queue (api/services/webhooks/activities.ts). */
export interface WebhookActivities {
  prepareWebhookRun(input: { runId: string }): Promise<PreparedWebhookRun>;
  /** Records the run's state; `callback`: the run's caller is waiting for a callback now that it ended. */
  recordWebhookRun(record: WebhookRunRecord): Promise<{ callback: boolean }>;
  deliverWebhookRunCallback(runId: string): Promise<'delivered' | 'already delivered' | 'no callback'>;
  webhookRunCallbackGaveUp(runId: string, error: string): Promise<void>;
}

/** Attempts of an automation callback before it is given up (as a media job's, with backoff up to 10 minutes). */
const callbackAttempts = 10;

export async function webhookRun(
  input: WebhookRunInput,
): Promise<{ status: 'done' | 'failed'; turnId: string | null }> {
  const { prepareWebhookRun, recordWebhookRun, webhookRunCallbackGaveUp } = proxyActivities<WebhookActivities>({
    taskQueue: input.agentsTaskQueue,
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
  });
  const { runId } = input;
  const prepared = await prepareWebhookRun({ runId });
  let status: 'done' | 'failed';
  let turnId: string | null = null;
  let callback: boolean;
  if (prepared.kind === 'reply') {
    status = prepared.failed ? 'failed' : 'done';
    ({ callback } = await recordWebhookRun(
      prepared.failed
        ? { runId, status, error: prepared.error ?? prepared.text }
        : { runId, status, answer: prepared.text },
    ));
    await deliverToChats(prepared.replyTo, (chat) => runDeliveryId('webhook', runId, chat), prepared.text);
  } else {
    const { turn } = prepared;
    turnId = turn.turnId;
    await recordWebhookRun({ runId, status: 'running', turnId });
    const outcome = await runAgentTurn(
      turn,
      `Webhook run ${runId}: turn ${turn.turn} of ${turn.sessionKey} (${prepared.agentName})`,
      'webhook-run',
    );
    status = outcome.ok ? 'done' : 'failed';
    ({ callback } = await recordWebhookRun(
      outcome.ok
        ? { runId, status, turnId, answer: outcome.text }
        : {
            runId,
            status,
            turnId,
            error: outcome.errorType ? `${outcome.errorType}: ${outcome.message}` : outcome.message,
          },
    ));
    const text = outcome.ok
      ? outcome.text
      : prepared.replyOnFailure
        ? `Sorry, I could not answer that: ${outcome.message}`
        : '';
    await deliverToChats(prepared.deliverTo, (chat) => runDeliveryId('webhook', turn.turnId, chat), text);
  }
  if (callback) {
    const { deliverWebhookRunCallback } = proxyActivities<WebhookActivities>({
      taskQueue: input.agentsTaskQueue,
      startToCloseTimeout: '30s',
      retry: {
        initialInterval: '1s',
        backoffCoefficient: 3,
        maximumInterval: '10m',
        maximumAttempts: callbackAttempts,
        nonRetryableErrorTypes: ['CallbackRefused'],
      },
    });
    try {
      await deliverWebhookRunCallback(runId);
    } catch (error) {
      const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
      await webhookRunCallbackGaveUp(runId, cause instanceof Error ? cause.message : String(cause));
    }
  }
  return { status, turnId };
}
