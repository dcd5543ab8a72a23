/**
 * Inbound webhook runs (common/webhooks.ts): the `webhook_runs` row a delivery is recorded in once it is verified,
 * and its workflow `webhookRun` (same id). A redelivery (the same delivery id) finds the row and is answered with the
 * first run; while that run has not ended its workflow's start is repeated too, which Temporal answers with the run
 * that exists, so a process that died between recording a delivery and starting its run is covered by the sender's
 * retry, and nothing ever runs twice (the id is taken once, a closed workflow's id is not reused, and a run the row
 * says has ended is never started again).
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { CapacityQueue } from '../../../activities/capacity/capacity-queue.ts';
import type { StreamJournal } from '../../../activities/streaming/stream-journal.ts';
import type { ChatTurnEvent } from '../../../common/chat-turn.ts';
import { kindKey, userKey } from '../../../common/search-attributes.ts';
import type { WebhookRunSource, WebhookRunStatus } from '../../../common/webhooks.ts';
import type { Pool } from '../../../db/pool.ts';
import { chatTurnTraceQuery } from '../../../workflows/chat-turn.workflow.ts';
import type { webhookRun } from '../../../workflows/webhook-run.workflow.ts';

/** What a run carries besides its message, by source. */
export interface WebhookRunOptions {
  /** Standard Webhooks: the answer also goes to the owner's linked chats. */
  forwardToMessengers?: boolean;
  /** GitHub: the repository and whether (and how) the agent may comment back. */
  github?: { repository: string; canComment: boolean; commentWithoutApproval: boolean };
  /** Slack: where the event came from, and the thread the answer goes in. */
  slack?: { team: string; channel: string; thread: string };
}

export interface NewWebhookRun {
  id: string;
  /** The owner (null for a Slack event: who owns the chat is decided when the run is prepared). */
  userId: string | null;
  source: WebhookRunSource;
  webhookId: string | null;
  /** The agent named (null: routed, Slack). */
  agentId: string | null;
  deliveryId: string;
  sessionKey: string;
  message: string;
  options: WebhookRunOptions;
  callbackUrl?: string | null;
}

export interface WebhookRunRow {
  id: string;
  user_id: string | null;
  source: WebhookRunSource;
  webhook_id: string | null;
  agent_id: string | null;
  delivery_id: string;
  session_key: string;
  message: string;
  options: WebhookRunOptions;
  callback_url: string | null;
  callback_wanted: boolean;
  callback_status: string | null;
  callback_attempts: number;
  callback_error: string | null;
  status: WebhookRunStatus;
  turn_id: string | null;
  answer: string | null;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/** A run as `GET /webhook/runs/{id}` shows it. */
export interface WebhookRunView {
  id: string;
  source: WebhookRunSource;
  agent_id: string | null;
  delivery_id: string;
  /**
   * `waiting_for_approval`: the turn waits for the owner's decision on a tool call (`pending_approval`). `queued` is
   * also a prepared run that waits for a slot of its owner's in the capacity queue (`queue_position`).
   */
  status: WebhookRunStatus | 'waiting_for_approval';
  /** Its place among its owner's waiting jobs (1 = next), while it waits in the capacity queue. */
  queue_position?: number;
  session_id: string;
  turn_id: string | null;
  answer: string | null;
  error: string | null;
  pending_approval?: {
    approval_id: string;
    tool: string;
    arguments: unknown;
    expires_at: string;
    approve: string;
    reject: string;
  };
  callback?: { url: string; status: string | null; attempts: number; error: string | null };
  created_at: string;
  finished_at: string | null;
}

const columns = `id, user_id, source, webhook_id, agent_id, delivery_id, session_key, message, options, callback_url,
  callback_wanted, callback_status, callback_attempts, callback_error, status, turn_id, answer, error, created_at,
  finished_at`;

const statements = {
  insert: {
    name: 'webhook-runs-insert',
    text: `insert into webhook_runs (id, user_id, source, webhook_id, agent_id, delivery_id, session_key, message,
             options, callback_url, callback_wanted, callback_attempts, status, created_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false, 0, 'queued', now())
           on conflict (id) do nothing returning ${columns}`,
  },
  select: { name: 'webhook-runs-select', text: `select ${columns} from webhook_runs where id = $1` },
  wantCallback: {
    name: 'webhook-runs-want-callback',
    text: `update webhook_runs set callback_wanted = true where id = $1 and status in ('queued', 'running')
           and callback_url is not null returning id`,
  },
} as const;

export class WebhookRuns {
  private readonly dependencies: {
    pool: Pool;
    client: Client;
    taskQueue: string;
    agentsTaskQueue: string;
    journal: StreamJournal;
    /** The capacity queue, for a run's place while it waits (docs/capacity-queue.md). */
    capacity: Pick<CapacityQueue, 'position'>;
  };

  constructor(dependencies: WebhookRuns['dependencies']) {
    this.dependencies = dependencies;
  }

  /**
   * Records the run and starts its workflow; a delivery seen before is the first run (`duplicate`), answered without
   * `admit` (which refuses a new run, e.g. past the owner's rate limit, by throwing).
   */
  async accept(
    run: NewWebhookRun,
    admit: () => Promise<void> = async () => undefined,
  ): Promise<{ row: WebhookRunRow; duplicate: boolean }> {
    const { pool } = this.dependencies;
    const earlier = await this.row(run.id);
    if (earlier) {
      // Started again only while it has not ended: an ended run's workflow is gone from Temporal after the
      // namespace's retention, and a start then would run the delivery a second time.
      if (earlier.status === 'queued' || earlier.status === 'running') await this.launch(earlier.id, earlier.user_id);
      return { row: earlier, duplicate: true };
    }
    await admit();
    const inserted = await pool.query({
      ...statements.insert,
      values: [
        run.id,
        run.userId,
        run.source,
        run.webhookId,
        run.agentId,
        run.deliveryId,
        run.sessionKey,
        run.message,
        JSON.stringify(run.options),
        run.callbackUrl ?? null,
      ],
    });
    await this.launch(run.id, run.userId);
    // Inserted here, or (a delivery racing its own retry) by the other request a moment ago.
    const row = (inserted.rows[0] as WebhookRunRow | undefined) ?? (await this.row(run.id));
    if (!row) throw new Error(`the run ${run.id} was recorded but cannot be read`);
    return { row, duplicate: inserted.rowCount === 0 };
  }

  async row(id: string): Promise<WebhookRunRow | null> {
    const { rows } = await this.dependencies.pool.query<WebhookRunRow>({ ...statements.select, values: [id] });
    return rows[0] ?? null;
  }

  /** The caller's run as the API shows it; null when there is none or it is another user's. */
  async view(userId: string, id: string): Promise<WebhookRunView | null> {
    const row = await this.row(id);
    if (!row || row.user_id !== userId) return null;
    return this.viewOf(row);
  }

  async viewOf(row: WebhookRunRow): Promise<WebhookRunView> {
    const view: WebhookRunView = {
      id: row.id,
      source: row.source,
      agent_id: row.agent_id,
      delivery_id: row.delivery_id,
      status: row.status,
      session_id: row.session_key,
      turn_id: row.turn_id,
      answer: row.answer,
      error: row.error,
      ...(row.callback_url
        ? {
            callback: {
              url: row.callback_url,
              status: row.callback_status,
              attempts: row.callback_attempts,
              error: row.callback_error,
            },
          }
        : {}),
      created_at: row.created_at.toISOString(),
      finished_at: row.finished_at?.toISOString() ?? null,
    };
    if (row.status === 'running' && row.turn_id) {
      // A prepared run waits for a slot before its turn starts (its holder in the queue is its turn).
      const place = await this.dependencies.capacity.position(row.turn_id);
      if (place !== null) return { ...view, status: 'queued', queue_position: place };
      const pending = await this.pendingApproval(row.turn_id);
      if (pending) {
        view.status = 'waiting_for_approval';
        view.pending_approval = pending;
      }
    }
    return view;
  }

  /**
   * Waits up to `ms` for the run to end: true when it did. Temporal's own wait for the workflow's result (a long
   * poll), not a poll of the row.
   */
  async wait(id: string, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([
        this.dependencies.client.workflow
          .getHandle(id)
          .result()
          .then(() => true),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Asks for the run's callback when it ends; false when it has ended already (the caller answers with the result
   * instead). Atomic with the run's last record (one row), so exactly one of the two answers reaches the caller.
   */
  async wantCallback(id: string): Promise<boolean> {
    const { rowCount } = await this.dependencies.pool.query({ ...statements.wantCallback, values: [id] });
    return (rowCount ?? 0) > 0;
  }

  /** Starts the run's workflow; finding it started (running or ended) is the same success. */
  private async launch(id: string, userId: string | null): Promise<void> {
    const { client, taskQueue, agentsTaskQueue } = this.dependencies;
    try {
      await client.workflow.start<typeof webhookRun>('webhookRun', {
        workflowId: id,
        taskQueue,
        args: [{ runId: id, agentsTaskQueue }],
        requestEagerStart: true,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          { key: kindKey, value: 'webhook-run' },
          { key: userKey, value: userId ?? 'unlinked' },
        ],
        staticSummary: `Webhook run ${id}`,
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  /** The tool call the run's turn waits on, with its arguments (from the turn's stream journal). */
  private async pendingApproval(turnId: string): Promise<WebhookRunView['pending_approval'] | null> {
    let trace;
    try {
      trace = await this.dependencies.client.workflow.getHandle(turnId).query(chatTurnTraceQuery);
    } catch (error) {
      // The turn ended meanwhile (or has not started): nothing waits.
      if (error instanceof WorkflowNotFoundError) return null;
      if ((error as Error).message?.includes('completed')) return null;
      throw error;
    }
    const pending = trace.pendingApproval;
    if (!pending) return null;
    let args: unknown = null;
    for (const item of await this.dependencies.journal.read(turnId)) {
      const event = item.event as ChatTurnEvent;
      if (event.type === 'approval-required' && event.approvalId === pending.approvalId) {
        try {
          args = JSON.parse(event.arguments);
        } catch {
          args = event.arguments;
        }
      }
    }
    const path = `/chat/approvals/${encodeURIComponent(pending.approvalId)}`;
    return {
      approval_id: pending.approvalId,
      tool: pending.tool,
      arguments: args,
      expires_at: pending.expiresAt,
      approve: `POST ${path}/approve`,
      reject: `POST ${path}/reject`,
    };
  }
}

/**
 * A run's session key as the history routes take it (letters, digits, `:_.@-`, at most 128): other characters become
 * `-`, and a longer key keeps its first 100 characters and a hash of the whole, so two keys never meet.
 */
export function webhookSessionKey(raw: string): string {
  const key = raw.replace(/[^A-Za-z0-9:_.@-]/g, '-');
  if (key.length <= 128) return key;
  return `${key.slice(0, 100)}:${createHash('sha256').update(raw).digest('hex').slice(0, 24)}`;
}
