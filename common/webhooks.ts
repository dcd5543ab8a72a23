/**
 * Inbound webhook runs (docs/webhooks.md) as the routes, the workflow and its activities share them.
 * Workflow-safe: no zod, no I/O.
 *
 * Every accepted delivery is a run: a row in `webhook_runs` (what `GET /webhook/runs/{id}` shows) and the workflow
 * `webhookRun` whose id is the run's id, `webhook-<agent>-<delivery id>`. The delivery id is the sender's own id of
 * the delivery, scoped to where it came from, so two senders' ids never meet and a redelivery finds the first run:
 * - Standard Webhooks: `<webhook id>.<webhook-id header>`;
 * - GitHub: `<webhook id>.<X-GitHub-Delivery>`;
 * - Slack: `<team id>.<event_id>` (and `slack` stands for the agent, which is routed later);
 * - automation: `<user id>.<Idempotency-Key>`, or a fresh id when the caller sends none.
 */
import type { MessengerTarget } from './messengers.ts';
import type { PreparedAgentTurn } from './agent-runs.ts';

export type WebhookRunSource = 'standard' | 'github' | 'slack' | 'automation';

export type WebhookRunStatus = 'queued' | 'running' | 'done' | 'failed';

/** Characters a delivery id (and so a run id) may hold: what workflow ids, URLs and logs all take as they are. */
export const deliveryIdPattern = /^[A-Za-z0-9_.:-]{1,200}$/;

export function webhookRunId(agent: string, deliveryId: string): string {
  return `webhook-${agent}-${deliveryId}`;
}

export interface WebhookRunInput {
  runId: string;
  /** Where the run's preparing and recording activities run (the agent service's queue, `agentsTaskQueue`). */
  agentsTaskQueue: string;
}

export type PreparedWebhookRun =
  /** A turn of the agent; `replyOnFailure`: a failed turn is answered in the chat too (Slack). */
  | (PreparedAgentTurn & { replyOnFailure: boolean })
  /** No turn: a reply that needs no model (a linking command, a Slack chat not linked yet) or a refusal's reply. */
  | { kind: 'reply'; text: string; replyTo: MessengerTarget[]; failed: boolean; error?: string };

export interface WebhookRunRecord {
  runId: string;
  status: 'running' | 'done' | 'failed';
  turnId?: string | null;
  answer?: string;
  error?: string;
}
