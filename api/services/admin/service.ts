/**
 * The operator console's reads and writes (api/agents/routes/admin/, docs/web-app.md, "Operator console"), on the
 * platform's own parts rather than copies of them:
 *
 * - users, their plans, balances and keys: `users` and `api_keys`, found by the start of the address (a range of
 *   `users_email_prefix_index`) or by id, or listed newest first, in keyset pages; a credit adjustment is the credit
 *   ledger's (`CreditLedger.adjust`: one ledger, the entry and the balance in one statement, once per idempotency
 *   key); a key is revoked by `ApiKeyService.revoke`, which also drops it from this replica's principal cache at once
 *   (the others hear it from the database); a plan or limits change is the gateway's (`AccountService.update`).
 * - the audit log (audit.ts): each of those three actions writes its row with the action itself, in its statement
 *   or transaction, with the operator, the reason and the request's id.
 * - recent chat turns: `chat_turns` (newest first, on its (created_at, …) index), their credits from the ledger's
 *   settlements (`credit_ledger.workflow_id` is the turn's id); a turn's trace adds the tools it called (names only),
 *   its ledger entries, its workflow as Temporal describes it and the `trace` query of the chat-turn workflow
 *   (each provider attempt: provider, outcome, latency), answered by a worker (by replay, once the turn ended).
 * - recent completion requests: Temporal's visibility (`TesseraKind` `completion` or `response`; the platform keeps no table of
 *   requests, the workflow is the record), scoped to this deployment's task queue; a request's trace is the
 *   gateway's own (`CompletionService.trace`, as `GET /api/v1/requests/{id}` answers it).
 * - failed workflows: visibility again, `ExecutionStatus` failed or timed out and closed in the period, each with the
 *   failure's message read from its closing event alone.
 * - provider health: the circuit breakers the failover uses (`CircuitBreaker.views`), for every provider of the
 *   catalogue and every media engine (`media:<engine>`).
 * - schedules, media jobs and webhook runs by status, and the period's totals: the dashboard's platform figures
 *   (`DashboardService`, the same SQL `GET /dashboard` answers the master key with).
 *
 * Every Temporal workflow named in an answer comes with its link in the Temporal Web UI (TEMPORAL_UI_URL).
 */
import type { CapacityQueue } from '../../../activities/capacity/capacity-queue.ts';
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import type { MediaEngines } from '../../../activities/media/media-activities.ts';
import { breakerKey } from '../../../activities/media/fallback.ts';
import type { BreakerView, CircuitBreaker } from '../../../activities/routing/circuit-breaker.ts';
import type { Catalogue } from '../../../common/catalogue.ts';
import { completionWorkflowId } from '../../../common/completion.ts';
import { kindKey, modelKey, userKey } from '../../../common/search-attributes.ts';
import { run, type Pool } from '../../../db/pool.ts';
import { chatTurnTraceQuery, type ChatTurnTrace } from '../../../workflows/chat-turn.workflow.ts';
import type {
  FailedWorkflow,
  Health,
  LedgerEntry,
  RequestSummary,
  TurnSummary,
  TurnTrace,
  UserSummary,
  UsersCursor,
} from '../../agents/routes/admin/schema.ts';
import { encodeUsersCursor } from '../../agents/routes/admin/schema.ts';
import { ApiError } from '../../errors.ts';
import type { CompletionService } from '../../gateway/routes/completions/service.ts';
import type { ApiKeyService, CustomLimits, Principal } from '../apikeys/service.ts';
import type { DashboardService } from '../dashboard/service.ts';
import { actorOf, auditWrite, readAudit } from './audit.ts';
import { adminEmailSet, isAdminAccount, type Operator } from './operators.ts';
import type { AccountService } from '../account/service.ts';
import type { PlanName } from '../../../common/plans.ts';
import { normalizeEmail } from '../../../common/email.ts';

const { HistoryEventFilterType } = proto.temporal.api.enums.v1;

export interface AdminServiceDependencies {
  pool: Pool;
  ledger: CreditLedger;
  keys: ApiKeyService;
  dashboard: DashboardService;
  /** The gateway's completions over the same router and ledger: request traces. */
  completions: CompletionService;
  client: Client;
  /** This deployment's workflows run on this task queue: visibility queries are scoped to it. */
  taskQueue: string;
  catalogue: Catalogue;
  breaker: CircuitBreaker;
  media: MediaEngines;
  /** The Temporal Web UI's base URL (TEMPORAL_UI_URL). */
  temporalUiUrl: string;
  /** ADMIN_EMAILS. */
  adminEmails: string[];
  /** The durable capacity queue (docs/capacity-queue.md). */
  capacity: Pick<CapacityQueue, 'depth'>;
  /** Accounts: plan and limits changes, the one implementation the gateway's `PATCH /api/v1/account/{id}` uses too. */
  accounts: AccountService;
  /** How long a turn's trace query may take before the trace is answered without its attempts. */
  traceQueryTimeoutMs?: number;
}

/** The principal the dashboard answers with the platform's figures. */
const platformPrincipal: Principal = {
  userId: 'operator',
  keyId: null,
  operator: true,
  plan: 'business',
  customLimits: null,
};

interface UserRow {
  id: string;
  email: string | null;
  plan: string;
  role: 'user' | 'admin';
  credits_balance: number;
  credits_held: number;
  created_at: Date;
  keys: number;
}

interface LedgerRow {
  id: string;
  kind: string;
  amount: number;
  workflow_id: string | null;
  attempt: number | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  note: string | null;
  created_at: Date;
}

interface TurnRow {
  id: string;
  conversation_id: string;
  number: number;
  status: string;
  agent_id: string | null;
  created_at: Date;
  finished_at: Date | null;
  routing_workflow_id: string | null;
  owner: string;
  email: string | null;
  credits: string;
}

const userColumns = `u.id, u.email, u.plan, u.role, u.credits_balance, u.credits_held, u.created_at,
  (select count(*) from api_keys k where k.user_id = u.id and k.revoked_at is null)::int as keys`;

/** A user's creation as the next page's cursor: to the microsecond (a JavaScript Date keeps milliseconds). */
const cursorColumn = `to_char(u.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at`;

/**
 * Everyone, newest first, a page after the cursor's creation (`$1`, to the microsecond; `infinity` for the first page)
 * and id (`$2`): the (created_at, id) index read backwards from the cursor, `$3` rows.
 */
export const newestUsersStatement = {
  name: 'admin-users-newest',
  text: `select ${userColumns}, 1 as rank, ${cursorColumn} from users u
         where (u.created_at, u.id) < ($1::timestamptz, $2::text)
         order by u.created_at desc, u.id desc limit $3::int`,
};

/**
 * A search: on its first page (`$5`), the user whose id is `$1`; then the users whose address is in [`$2`, `$3`) in
 * byte order (the addresses starting with the search: `$3` is it with its last character one higher) and after the
 * cursor's address `$4` ('' on the first page), in address order, `$6` rows. The address range is read from
 * `users_email_prefix_index` (the address in the "C" collation: byte order whatever the database's collation), so a
 * page costs its rows, not the table: docs/web-app.md, "Operator console", has the plan.
 */
export const searchUsersStatement = {
  name: 'admin-users-search',
  text: `select * from (
           select ${userColumns}, 0 as rank, ${cursorColumn} from users u where u.id = $1::text and $5::boolean
           union all
           (select ${userColumns}, 1 as rank, ${cursorColumn} from users u
            where u.email collate "C" >= $2::text and u.email collate "C" < $3::text
              and u.email collate "C" > $4::text and (not $5::boolean or u.id <> $1::text)
            order by u.email collate "C" limit $6::int)
         ) found
         order by rank, email collate "C" limit $6::int`,
};

const userStatement = {
  name: 'admin-user',
  text: `select ${userColumns}, u.plan_cycle_start, u.custom_limits,
           (select max(created_at) from web_sessions s where s.user_id = u.id) as last_login_at
         from users u where u.id = $1`,
};

const keysStatement = {
  name: 'admin-user-keys',
  text: `select id, name, preview, created_at, last_used_at, revoked_at from api_keys where user_id = $1
         order by created_at desc, id desc`,
};

/** `id` is answered as text (a bigint); an `order by` names the table's column, not this text. */
const ledgerColumns = `id::text, kind, amount, workflow_id, attempt, model, prompt_tokens, completion_tokens, note,
  created_at`;

const ledgerStatement = {
  name: 'admin-user-ledger',
  text: `select ${ledgerColumns} from credit_ledger
         where user_id = $1 and ($2::bigint is null or id < $2::bigint) and ($3::text is null or kind = $3::text)
         order by credit_ledger.id desc limit $4::int`,
};

const turnColumns = `t.id, t.conversation_id, t.number, t.status, t.agent_id, t.created_at, t.finished_at,
  t.routing_workflow_id, c.owner, u.email,
  (select coalesce(sum(l.amount), 0) from credit_ledger l where l.workflow_id = t.id and l.kind = 'settle') as credits`;

/** The newest turns, of one owner (`$1`, `user:<id>`) or all, of one status (`$2`) or any. */
const turnsStatement = {
  name: 'admin-turns',
  text: `select ${turnColumns}
         from chat_turns t join chat_conversations c on c.id = t.conversation_id
         left join users u on c.owner like 'user:%' and u.id = substr(c.owner, 6)
         where ($1::text is null or c.owner = $1::text) and ($2::text is null or t.status = $2::text)
         order by t.created_at desc, t.id desc limit $3::int`,
};

const turnStatement = {
  name: 'admin-turn',
  text: `select ${turnColumns}
         from chat_turns t join chat_conversations c on c.id = t.conversation_id
         left join users u on c.owner like 'user:%' and u.id = substr(c.owner, 6)
         where t.id = $1`,
};

/** The tools a turn's assistant messages called, in order. */
const turnToolsStatement = {
  name: 'admin-turn-tools',
  text: `select tool_calls from chat_messages
         where conversation_id = $1 and turn = $2 and role = 'assistant' and tool_calls is not null order by seq`,
};

const workflowLedgerStatement = {
  name: 'admin-workflow-ledger',
  text: `select ${ledgerColumns} from credit_ledger where workflow_id = any($1::text[]) order by credit_ledger.id`,
};

/** The media engines' kinds (MediaEngines), in the order the console lists them. */
const mediaCapabilities: Array<keyof MediaEngines> = [
  'speech',
  'transcription',
  'images',
  'backgroundRemoval',
  'upscale',
  'ocr',
  'soundEffects',
  'video',
  'music',
];

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export class AdminService {
  private readonly dependencies: AdminServiceDependencies;
  private readonly adminEmails: Set<string>;
  private readonly namespace: string;

  constructor(dependencies: AdminServiceDependencies) {
    this.dependencies = dependencies;
    this.adminEmails = adminEmailSet(dependencies.adminEmails);
    this.namespace = dependencies.client.options.namespace;
  }

  /** The workflow in the Temporal Web UI: its run's history, or (run unknown) the UI's redirect to the latest run. */
  temporalUrl(workflowId: string, runId?: string): string {
    const base = `${this.dependencies.temporalUiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(this.namespace)}`;
    const workflow = `${base}/workflows/${encodeURIComponent(workflowId)}`;
    return runId ? `${workflow}/${encodeURIComponent(runId)}/history` : workflow;
  }

  // Users, credits, keys.

  /**
   * A page of users: with `q`, the user whose id it is and those whose address starts with it; without, everyone,
   * newest first. Keyset pages: `next` (the last row's address, or creation and id) continues after the page's last
   * row, so a page costs its own rows however deep it is, and a user added meanwhile never shifts a page.
   */
  async users(query: { q?: string | undefined; limit: number; after?: UsersCursor | undefined }) {
    const { pool } = this.dependencies;
    const rows = query.q
      ? await run<UserRow & { rank: number; cursor_at: string }>(pool, searchUsersStatement, [
          query.q,
          ...prefixRange(normalizeEmail(query.q)),
          query.after && 'email' in query.after ? query.after.email : '',
          query.after === undefined,
          query.limit + 1,
        ])
      : await run<UserRow & { rank: number; cursor_at: string }>(pool, newestUsersStatement, [
          query.after && 'created_at' in query.after ? query.after.created_at : 'infinity',
          query.after && 'id' in query.after ? query.after.id : '',
          query.limit + 1,
        ]);
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    let next: UsersCursor | null = null;
    if (rows.length > query.limit && last) {
      next = query.q ? { email: last.rank === 0 ? '' : last.email! } : { created_at: last.cursor_at, id: last.id };
    }
    return {
      users: page.map((row) => this.userSummary(row)),
      limit: query.limit,
      next: next && encodeUsersCursor(next),
    };
  }

  async user(userId: string) {
    const { pool } = this.dependencies;
    const [rows, keys] = await Promise.all([
      run<
        UserRow & {
          plan_cycle_start: Date | null;
          custom_limits: Record<string, unknown> | null;
          last_login_at: Date | null;
        }
      >(pool, userStatement, [userId]),
      run<{
        id: string;
        name: string | null;
        preview: string;
        created_at: Date;
        last_used_at: Date | null;
        revoked_at: Date | null;
      }>(pool, keysStatement, [userId]),
    ]);
    const row = rows[0];
    if (!row) throw new ApiError('not_found', `No user ${userId}`);
    return {
      user: {
        ...this.userSummary(row),
        plan_cycle_start: iso(row.plan_cycle_start),
        custom_limits: row.custom_limits,
        last_login_at: iso(row.last_login_at),
      },
      api_keys: keys.map((key) => ({
        id: key.id,
        name: key.name,
        key_preview: key.preview,
        created_at: iso(key.created_at)!,
        last_used_at: iso(key.last_used_at),
        revoked_at: iso(key.revoked_at),
      })),
    };
  }

  async ledger(userId: string, query: { limit: number; before?: string | undefined; kind?: string | undefined }) {
    await this.requireUser(userId);
    const rows = await run<LedgerRow>(this.dependencies.pool, ledgerStatement, [
      userId,
      query.before ?? null,
      query.kind ?? null,
      query.limit + 1,
    ]);
    const page = rows.slice(0, query.limit);
    return {
      entries: page.map(ledgerEntry),
      next_before: rows.length > query.limit ? page[page.length - 1]!.id : null,
    };
  }

  /**
   * Moves a user's credits by `amount` for `reason`, written to the credit ledger as an `adjust` entry whose note is
   * the reason and who gave it (`Goodwill for the outage (by ops@example.com)`). The ledger key is made of the user
   * and the Idempotency-Key, so a repeat finds the first entry: the same adjustment again answers it (`replayed`),
   * anything else with that key is a 409.
   */
  async adjustCredits(
    operator: Operator,
    userId: string,
    request: { amount: number; reason: string },
    idempotencyKey: string,
    requestId: string,
  ) {
    const note = `${request.reason} (by ${operator.label})`;
    const key = `adjust:${userId}:${createHash('sha256').update(idempotencyKey).digest('base64url')}`;
    // The audit row rides in the adjustment's statement, written from its ledger entry: once, as the entry is.
    const audit = auditWrite(
      'credits.adjust',
      { actor: actorOf(operator), reason: request.reason, requestId },
      {
        from: 'entry',
        target: 'entry.user_id',
        details: { amount: request.amount },
        fromDetails: `jsonb_build_object('ledger_entry_id', entry.id::text)`,
      },
    );
    const outcome = await this.dependencies.ledger.adjust({ userId, key, amount: request.amount, note }, audit);
    switch (outcome.outcome) {
      case 'unknown':
        throw new ApiError('not_found', `No user ${userId}`);
      case 'short':
        throw new ApiError(
          'conflict',
          `Taking ${-request.amount} credits would leave less than nothing: ${userId} has ${outcome.available} available (balance less what running work holds)`,
          { param: 'amount' },
        );
      case 'overflow':
        throw new ApiError('conflict', 'The balance would pass the largest number of credits an account can hold', {
          param: 'amount',
        });
      case 'replayed':
        if (outcome.entry.amount !== request.amount || outcome.entry.note !== note) {
          throw new ApiError(
            'conflict',
            'This Idempotency-Key was used for another adjustment: send a new key for a new adjustment',
            { param: 'Idempotency-Key' },
          );
        }
    }
    const [entry] = (
      await this.dependencies.pool.query<LedgerRow>(`select ${ledgerColumns} from credit_ledger where id = $1`, [
        outcome.entry.id,
      ])
    ).rows;
    const balance = (await this.dependencies.ledger.balance(userId))!;
    return {
      entry: ledgerEntry(entry!),
      credits: { balance: balance.balance, held: balance.held, available: balance.available },
      replayed: outcome.outcome === 'replayed',
    };
  }

  /** Revokes one of the user's keys, its audit row riding in the revocation's statement (none when nothing was). */
  async revokeKey(operator: Operator, userId: string, keyId: string, reason: string, requestId: string) {
    const audit = auditWrite(
      'key.revoke',
      { actor: actorOf(operator), reason, requestId },
      {
        from: 'revoked',
        target: 'revoked.user_id',
        fromDetails: `jsonb_build_object('key_id', revoked.id, 'name', revoked.name, 'preview', revoked.preview)`,
      },
    );
    if (!(await this.dependencies.keys.revoke(userId, keyId, audit))) {
      throw new ApiError('not_found', `No live key ${keyId} of user ${userId}`);
    }
    return { revoked: true as const, id: keyId, user_id: userId };
  }

  /** Changes the user's plan or custom limits: the gateway's own `AccountService.update`, audited as this operator's. */
  async changeAccount(
    operator: Operator,
    userId: string,
    change: { plan?: PlanName; custom_limits?: CustomLimits | null; reason: string },
    requestId: string,
  ) {
    const { reason, ...update } = change;
    return this.dependencies.accounts.update(userId, update, { actor: actorOf(operator), reason, requestId });
  }

  /** The audit log, newest first: of one user or everyone's, one action or all. */
  async audit(query: {
    user_id?: string | undefined;
    action?: string | undefined;
    before?: string | undefined;
    limit: number;
  }) {
    return readAudit(this.dependencies.pool, query);
  }

  // Turns and requests.

  async turns(query: { user_id?: string | undefined; status?: string | undefined; limit: number }) {
    const rows = await run<TurnRow>(this.dependencies.pool, turnsStatement, [
      query.user_id ? `user:${query.user_id}` : null,
      query.status ?? null,
      query.limit,
    ]);
    return { turns: rows.map((row) => this.turnSummary(row)) };
  }

  async turn(turnId: string): Promise<TurnTrace> {
    const { pool, client } = this.dependencies;
    const [row] = await run<TurnRow>(pool, turnStatement, [turnId]);
    if (!row) throw new ApiError('not_found', `No turn ${turnId}`);
    const workflows = [row.id, ...(row.routing_workflow_id ? [row.routing_workflow_id] : [])];
    const [tools, ledger, description] = await Promise.all([
      run<{ tool_calls: Array<{ function: { name: string } }> }>(pool, turnToolsStatement, [
        row.conversation_id,
        row.number,
      ]),
      run<LedgerRow>(pool, workflowLedgerStatement, [workflows]),
      describe(client, row.id),
    ]);
    const called = tools.flatMap((message) => message.tool_calls.map((call) => call.function.name));
    const trace: { value: ChatTurnTrace; error: null } | { value: null; error: string } = description
      ? await this.turnTraceQuery(row.id)
      : { value: null, error: 'Temporal no longer keeps this workflow' };
    const traced = trace.value;
    return {
      ...this.turnSummary(row),
      routing_workflow_id: row.routing_workflow_id,
      tool_calls: traced
        ? traced.toolCalls.map((call) => ({ name: call.name, ok: call.ok }))
        : called.map((name) => ({ name, ok: null })),
      ledger: ledger.map(ledgerEntry),
      workflow: description
        ? {
            status: description.status.name.toLowerCase(),
            run_id: description.runId,
            started_at: description.startTime.toISOString(),
            closed_at: description.closeTime?.toISOString() ?? null,
            history_length: description.historyLength,
            temporal_url: this.temporalUrl(row.id, description.runId),
          }
        : null,
      attempts: traced
        ? traced.attempts.map((attempt) => ({
            attempt: attempt.attempt,
            model: attempt.model,
            provider: attempt.provider,
            outcome: attempt.outcome,
            latency_ms: attempt.latency_ms,
            ...(attempt.status !== undefined ? { status: attempt.status } : {}),
            ...(attempt.error !== undefined ? { error: attempt.error } : {}),
          }))
        : null,
      pending_approval:
        traced?.pendingApproval && description?.status.name === 'RUNNING'
          ? {
              approval_id: traced.pendingApproval.approvalId,
              tool: traced.pendingApproval.tool,
              expires_at: new Date(traced.pendingApproval.expiresAt).toISOString(),
            }
          : null,
      trace_error: trace.error,
    };
  }

  /**
   * The chat-turn workflow's `trace` query. A running turn answers from memory; an ended one is replayed by a worker
   * of the task queue to answer (its history read once), so the query is bounded: past the bound, or without a
   * worker, the trace goes without its attempts and says why.
   */
  private async turnTraceQuery(
    turnId: string,
  ): Promise<{ value: ChatTurnTrace; error: null } | { value: null; error: string }> {
    const timeoutMs = this.dependencies.traceQueryTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const value = await Promise.race([
        this.dependencies.client.workflow.getHandle(turnId).query(chatTurnTraceQuery),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no worker answered the trace query within ${timeoutMs / 1000} s`)),
            timeoutMs,
          );
        }),
      ]);
      return { value, error: null };
    } catch (error) {
      return { value: null, error: `The workflow’s trace could not be read: ${(error as Error).message}` };
    } finally {
      clearTimeout(timer);
    }
  }

  async requests(query: { user_id?: string | undefined; limit: number }) {
    // Completions of every door: chat completions and Messages (`completion`), Responses (`response`, `resp_…`).
    const filters = [
      `TesseraKind IN ('completion', 'response')`,
      ...(query.user_id ? [`TesseraUser = '${query.user_id}'`] : []),
    ];
    const executions = await this.list(filters, query.limit);
    const requests: RequestSummary[] = executions.map((execution) => ({
      request_id: execution.workflowId.replace(/^completion-/, ''),
      workflow_id: execution.workflowId,
      run_id: execution.runId,
      status: execution.status.name.toLowerCase(),
      user_id: execution.typedSearchAttributes.get(userKey) ?? null,
      model: execution.typedSearchAttributes.get(modelKey) ?? (execution.memo?.model as string | undefined) ?? null,
      started_at: execution.startTime.toISOString(),
      closed_at: execution.closeTime?.toISOString() ?? null,
      temporal_url: this.temporalUrl(execution.workflowId, execution.runId),
    }));
    return { requests };
  }

  /** A completion's trace as the gateway answers it (`GET /api/v1/requests/{id}`), with its Temporal link. */
  async request(requestId: string) {
    const trace = await this.dependencies.completions.trace('operator', true, requestId);
    return { trace, temporal_url: this.temporalUrl(completionWorkflowId(requestId), trace.run_id) };
  }

  async failedWorkflows(query: { hours: number; limit: number }, now = new Date()) {
    const since = new Date(now.getTime() - query.hours * 3600_000);
    const executions = await this.list(
      [`ExecutionStatus IN ('Failed', 'TimedOut')`, `CloseTime > '${since.toISOString()}'`],
      query.limit,
    );
    const workflows: FailedWorkflow[] = await Promise.all(
      executions.map(async (execution) => ({
        workflow_id: execution.workflowId,
        run_id: execution.runId,
        type: execution.type,
        kind: execution.typedSearchAttributes.get(kindKey) ?? null,
        user_id: execution.typedSearchAttributes.get(userKey) ?? null,
        status: execution.status.name === 'TIMED_OUT' ? ('timed_out' as const) : ('failed' as const),
        started_at: execution.startTime.toISOString(),
        closed_at: (execution.closeTime ?? now).toISOString(),
        failure: await this.failureOf(execution),
        temporal_url: this.temporalUrl(execution.workflowId, execution.runId),
      })),
    );
    return { since: since.toISOString(), workflows };
  }

  /** Visibility's newest workflows of this deployment's task queue matching `filters`, at most `limit`. */
  private async list(filters: string[], limit: number): Promise<WorkflowExecutionInfo[]> {
    const query = [`TaskQueue = '${this.dependencies.taskQueue.replace(/'/g, "''")}'`, ...filters].join(' AND ');
    const executions: WorkflowExecutionInfo[] = [];
    for await (const execution of this.dependencies.client.workflow.list({ query, pageSize: limit })) {
      executions.push(execution);
      if (executions.length >= limit) break;
    }
    return executions;
  }

  /** The failure's message from the workflow's closing event (one event read, not its history). */
  private async failureOf(execution: WorkflowExecutionInfo): Promise<string | null> {
    if (execution.status.name === 'TIMED_OUT') return 'The workflow ran past its execution timeout';
    try {
      const history = await this.dependencies.client.workflowService.getWorkflowExecutionHistory({
        namespace: this.namespace,
        execution: { workflowId: execution.workflowId, runId: execution.runId },
        historyEventFilterType: HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
      });
      const failure = history.history?.events?.[0]?.workflowExecutionFailedEventAttributes?.failure;
      if (!failure) return null;
      const cause = failure.cause?.message ? `: ${failure.cause.message}` : '';
      return `${failure.message ?? 'failed'}${cause}`.slice(0, 2000);
    } catch {
      return null;
    }
  }

  // Providers and the platform's figures.

  /** The capacity queue now: jobs waiting and holding slots, the longest wait, by kind, model, priority and plan. */
  async queue() {
    const rows = await this.dependencies.capacity.depth();
    return {
      groups: rows.map((row) => ({
        kind: row.kind,
        model: row.model,
        priority: row.priority,
        plan: row.plan,
        waiting: row.waiting,
        holding: row.holding,
        oldest_wait_seconds: Math.round(row.oldestWaitSeconds),
      })),
    };
  }

  async providers() {
    const { catalogue, breaker, media } = this.dependencies;
    const views = await breaker.views();
    const providers = catalogue.providers.map((provider) => {
      const view = views.get(provider.id);
      return {
        id: provider.id,
        name: provider.name,
        protocol: provider.protocol,
        enabled: provider.enabled,
        models: [
          ...catalogue.models.filter((model) => model.provider === provider.id).map((model) => model.id),
          ...(catalogue.selfHosted?.provider === provider.id ? [catalogue.selfHosted.id] : []),
        ],
        health: healthOf(view, provider.enabled),
        circuit: circuitOf(view),
      };
    });
    const capabilities = new Map<string, string[]>();
    for (const capability of mediaCapabilities) {
      for (const id of media[capability].keys()) capabilities.set(id, [...(capabilities.get(id) ?? []), capability]);
    }
    const mediaEngines = [...capabilities].map(([id, list]) => {
      const view = views.get(breakerKey(id));
      return { id, capabilities: list, health: healthOf(view, true), circuit: circuitOf(view) };
    });
    return {
      providers,
      media_engines: mediaEngines,
      breaker: { failure_threshold: breaker.options.failureThreshold, cooldown_ms: breaker.options.cooldownMs },
    };
  }

  async overview(days: number) {
    const figures = await this.dependencies.dashboard.dashboard(platformPrincipal, days);
    return {
      days: figures.days,
      since: figures.since,
      generated_at: figures.generated_at,
      totals: figures.totals,
      schedules: {
        total: figures.schedules.total,
        active: figures.schedules.enabled,
        paused: figures.schedules.total - figures.schedules.enabled,
        last_run_by_status: figures.schedules.last_run_by_status,
      },
      media_jobs: { by_status: figures.media_jobs.by_status },
      webhook_runs: figures.webhook_runs,
    };
  }

  private async requireUser(userId: string): Promise<void> {
    const { rowCount } = await this.dependencies.pool.query('select 1 from users where id = $1', [userId]);
    if (!rowCount) throw new ApiError('not_found', `No user ${userId}`);
  }

  private userSummary(row: UserRow): UserSummary {
    return {
      id: row.id,
      email: row.email,
      plan: row.plan,
      role: row.role,
      admin: isAdminAccount(row, this.adminEmails),
      credits: {
        balance: row.credits_balance,
        held: row.credits_held,
        available: row.credits_balance - row.credits_held,
      },
      keys: row.keys,
      created_at: iso(row.created_at)!,
    };
  }

  private turnSummary(row: TurnRow): TurnSummary {
    return {
      turn_id: row.id,
      conversation_id: row.conversation_id,
      number: row.number,
      user_id: row.owner.startsWith('user:') ? row.owner.slice('user:'.length) : null,
      email: row.email,
      agent_id: row.agent_id,
      status: row.status,
      created_at: iso(row.created_at)!,
      finished_at: iso(row.finished_at),
      credits: Number(row.credits),
      temporal_url: this.temporalUrl(row.id),
    };
  }
}

/**
 * The addresses starting with `prefix`, as a range in byte order (UTF-8's order is the code points'): from the prefix
 * itself up to, not including, the prefix with its last character one higher (a surrogate's code points are skipped;
 * a last character that cannot go higher is dropped and the one before it raised instead).
 */
export function prefixRange(prefix: string): [string, string] {
  const characters = [...prefix];
  while (characters.length > 0) {
    const last = characters.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return [prefix, characters.join('') + String.fromCodePoint(next)];
    }
  }
  // Only U+10FFFF: no address starts with it, and nothing is below the empty upper bound.
  return [prefix, ''];
}

function ledgerEntry(row: LedgerRow): LedgerEntry {
  return {
    id: row.id,
    kind: row.kind,
    amount: row.amount,
    workflow_id: row.workflow_id,
    attempt: row.attempt,
    model: row.model,
    prompt_tokens: row.prompt_tokens,
    completion_tokens: row.completion_tokens,
    note: row.note,
    created_at: iso(row.created_at)!,
  };
}

async function describe(client: Client, workflowId: string) {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

function healthOf(view: BreakerView | undefined, enabled: boolean): Health {
  if (!enabled) return 'disabled';
  if (!view || view.state === 'closed') return view && view.consecutiveFailures > 0 ? 'degraded' : 'healthy';
  return view.state === 'open' ? 'down' : 'probing';
}

function circuitOf(view: BreakerView | undefined) {
  return {
    state: view?.state ?? ('closed' as const),
    consecutive_failures: view?.consecutiveFailures ?? 0,
    opened_at: view?.openedAt?.toISOString() ?? null,
    probe_started_at: view?.probeStartedAt?.toISOString() ?? null,
    last_error: view?.lastError ?? null,
  };
}
