/**
 * The operator console's API (api/agents/routes/admin/routes.ts): what each route takes, validated at the edge, and
 * what it answers (the same schemas are its OpenAPI contract and, in the tests, the check of every answer).
 */
import { z } from 'zod';
import { isoDate } from '../../../openapi/contract.ts';
import { accountChangeFields, changesSomething } from '../../../gateway/routes/account/schema.ts';
import { auditActions, auditReasonSchema } from '../../../services/admin/audit.ts';

const count = z.number().int();
const nullableDate = isoDate.nullable();

/** A user id as the platform makes them (`user_…`); also what goes into a Temporal visibility query, so no quotes. */
export const userIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, '1 to 128 characters among A-Z a-z 0-9 _ -');
/** A workflow id of a chat turn (`chat-<conversation>-<n>`) or of a completion request (the request id). */
const workflowIdSchema = z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, '1 to 200 characters among A-Z a-z 0-9 _ . : -');

export const userParamsSchema = z.strictObject({ user_id: userIdSchema });
export const keyParamsSchema = z.strictObject({
  user_id: userIdSchema,
  key_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a key id (`key_…`)'),
});
export const turnParamsSchema = z.strictObject({ turn_id: workflowIdSchema });
export const requestParamsSchema = z.strictObject({ request_id: workflowIdSchema });

/** Where a page of users ends, for the next (`next` of a page; opaque to clients, a base64url JSON object here). */
const usersCursorSchema = z.union([
  /** A search's: the last address shown ('' after the user whose id is `q`, shown first). */
  z.strictObject({ email: z.string().max(254) }),
  /** The list of everyone's: the last user's creation (ISO 8601 to the microsecond, as PostgreSQL keeps it) and id. */
  z.strictObject({
    created_at: z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
    id: userIdSchema,
  }),
]);
export type UsersCursor = z.infer<typeof usersCursorSchema>;

export function encodeUsersCursor(cursor: UsersCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

/**
 * `GET /admin/api/users`: with `q`, the user whose id is `q`, then the users whose e-mail address starts with it (case
 * does not matter: addresses are stored lower-cased), in address order; without it, everyone, newest first. Pages of
 * `limit` (default 25, at most 100); `after` is the previous page's `next`.
 */
export const usersQuerySchema = z
  .strictObject({
    q: z.string().trim().max(254, 'at most 254 characters').optional(),
    limit: z.coerce.number('must be a number').int().min(1).max(100).default(25),
    after: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,800}$/, 'the `next` of a page')
      .transform((text, context) => {
        try {
          return JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
        } catch {
          context.addIssue({ code: 'custom', message: 'the `next` of a page' });
          return z.NEVER;
        }
      })
      .pipe(usersCursorSchema)
      .optional(),
  })
  .superRefine((query, context) => {
    if (query.after && 'email' in query.after !== Boolean(query.q)) {
      context.addIssue({
        code: 'custom',
        path: ['after'],
        message: query.q ? 'the `next` of a page of this search' : 'the `next` of a page of everyone (no `q`)',
      });
    }
  });

export const ledgerKinds = ['grant', 'purchase', 'adjust', 'reserve', 'settle', 'release'] as const;

/** `GET /admin/api/users/{user_id}/ledger`: newest first, `limit` entries (default 50) older than entry `before`. */
export const ledgerQuerySchema = z.strictObject({
  limit: z.coerce.number('must be a number').int().min(1).max(200).default(50),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,17}$/, 'an entry id (the `next_before` of a page)')
    .optional(),
  kind: z.enum(ledgerKinds).optional(),
});

/** The largest adjustment one request may make, either way (a business plan's monthly grant is a million). */
export const maxAdjustment = 100_000_000;

/**
 * `POST /admin/api/users/{user_id}/credits`: `amount` credits added (negative: taken back) for `reason`, which the
 * ledger entry records with who made it. The `Idempotency-Key` header is required: a repeat (a double click, a
 * retry) answers the first adjustment and moves nothing.
 */
export const adjustCreditsSchema = z.strictObject({
  amount: z
    .number('must be a whole number of credits')
    .int('must be a whole number of credits')
    .min(-maxAdjustment, `at least -${maxAdjustment}`)
    .max(maxAdjustment, `at most ${maxAdjustment}`)
    .refine((amount) => amount !== 0, 'must not be 0'),
  reason: auditReasonSchema,
});

/** `POST /admin/api/users/{user_id}/keys/{key_id}/revoke`: why, for the audit log. */
export const revokeKeySchema = z.strictObject({ reason: auditReasonSchema });

/**
 * `PATCH /admin/api/users/{user_id}/account`: the gateway's `PATCH /api/v1/account/{id}` (a plan, custom limits, or
 * both; the same service function does it), with the reason required.
 */
export const accountChangeSchema = accountChangeFields
  .extend({ reason: auditReasonSchema })
  .refine(...changesSomething);

/** `GET /admin/api/audit`: newest first, `limit` entries (default 50) older than entry `before`, of one user or all. */
export const auditQuerySchema = z.strictObject({
  user_id: userIdSchema.optional(),
  action: z.enum(auditActions).optional(),
  limit: z.coerce.number('must be a number').int().min(1).max(200).default(50),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,17}$/, 'an entry id (the `next_before` of a page)')
    .optional(),
});

export const idempotencyHeadersSchema = z.object({
  'idempotency-key': z
    .string('send an Idempotency-Key header (a fresh one per adjustment, the same one for a repeat)')
    .regex(/^[\x21-\x7e]{1,255}$/, '1 to 255 printable ASCII characters'),
});

export const turnStatuses = ['running', 'done', 'failed'] as const;

/** `GET /admin/api/turns`: the newest chat turns, of one user or all, of one status or any. */
export const turnsQuerySchema = z.strictObject({
  user_id: userIdSchema.optional(),
  status: z.enum(turnStatuses).optional(),
  limit: z.coerce.number('must be a number').int().min(1).max(100).default(25),
});

/** `GET /admin/api/requests`: the newest completion requests (Temporal's visibility), of one user or all. */
export const requestsQuerySchema = z.strictObject({
  user_id: userIdSchema.optional(),
  limit: z.coerce.number('must be a number').int().min(1).max(100).default(25),
});

/** `GET /admin/api/workflows/failed`: workflows that failed or timed out in the last `hours` (default a day). */
export const failedQuerySchema = z.strictObject({
  hours: z.coerce.number('must be a number').int().min(1).max(168).default(24),
  limit: z.coerce.number('must be a number').int().min(1).max(100).default(50),
});

/** `GET /admin/api/overview`: the platform's figures of the last `days` days (default 7). */
export const overviewQuerySchema = z.strictObject({
  days: z.coerce.number('must be a number').int().min(1).max(90).default(7),
});

// Answers.

const credits = z.strictObject({ balance: count, held: count, available: count });

export const userSummarySchema = z.strictObject({
  id: z.string(),
  email: z.string().nullable(),
  plan: z.string(),
  role: z.enum(['user', 'admin']),
  /** The role, or the address in ADMIN_EMAILS: may open the console. */
  admin: z.boolean(),
  credits,
  /** Live (unrevoked) API keys. */
  keys: count,
  created_at: isoDate,
});

export const usersAnswerSchema = z.strictObject({
  users: z.array(userSummarySchema),
  limit: count,
  /** Pass as `after` for the next page (with the same `q`); null on the last page. */
  next: z.string().nullable(),
});

export const keySchema = z.strictObject({
  id: z.string(),
  name: z.string().nullable(),
  key_preview: z.string(),
  created_at: isoDate,
  last_used_at: nullableDate,
  revoked_at: nullableDate,
});

export const userDetailSchema = z.strictObject({
  user: userSummarySchema.extend({
    plan_cycle_start: nullableDate,
    custom_limits: z.record(z.string(), z.unknown()).nullable(),
    /** The latest web login (magic link or Google). */
    last_login_at: nullableDate,
  }),
  /** Every key, live and revoked, newest first. */
  api_keys: z.array(keySchema),
});

export const ledgerEntrySchema = z.strictObject({
  id: z.string(),
  kind: z.string(),
  amount: count,
  workflow_id: z.string().nullable(),
  attempt: count.nullable(),
  model: z.string().nullable(),
  prompt_tokens: count.nullable(),
  completion_tokens: count.nullable(),
  note: z.string().nullable(),
  created_at: isoDate,
});

export const ledgerAnswerSchema = z.strictObject({
  entries: z.array(ledgerEntrySchema),
  /** Pass as `before` for the older entries; null on the last page. */
  next_before: z.string().nullable(),
});

export const adjustmentAnswerSchema = z.strictObject({
  entry: ledgerEntrySchema,
  credits,
  /** True when this Idempotency-Key had made the adjustment already: nothing moved this time. */
  replayed: z.boolean(),
});

export const revokedKeySchema = z.strictObject({ revoked: z.literal(true), id: z.string(), user_id: z.string() });

export const auditEntrySchema = z.strictObject({
  id: z.string(),
  at: isoDate,
  actor: z.string().meta({ description: 'An admin’s user id, `master-key` or `shell` (`npm run admin`)' }),
  actor_email: z.string().nullable().meta({ description: 'The admin’s address when they acted' }),
  action: z.enum(auditActions),
  user_id: z.string().nullable().meta({ description: 'The account acted on' }),
  user_email: z.string().nullable().meta({ description: 'That account’s address now' }),
  reason: z.string().nullable(),
  details: z.record(z.string(), z.unknown()).meta({
    description:
      '`credits.adjust`: amount, ledger_entry_id; `key.create`: key_id, name, preview, account_created, plan; `key.revoke`: key_id, name, preview; `account.update`: before and after ({plan, custom_limits}), new_cycle; `role.*`: before and after',
  }),
  request_id: z.string().nullable().meta({ description: 'The request’s X-Request-Id (null for the shell)' }),
});

export const auditAnswerSchema = z.strictObject({
  entries: z.array(auditEntrySchema),
  /** Pass as `before` for the older entries; null on the last page. */
  next_before: z.string().nullable(),
});

const temporalUrl = z.url().meta({ description: 'The workflow in the Temporal Web UI (TEMPORAL_UI_URL)' });

export const turnSummarySchema = z.strictObject({
  turn_id: z.string().meta({ description: 'Also the turn’s workflow id' }),
  conversation_id: z.string(),
  number: count,
  user_id: z.string().nullable(),
  email: z.string().nullable(),
  agent_id: z.string().nullable(),
  status: z.string(),
  created_at: isoDate,
  finished_at: nullableDate,
  /** Credits the turn's model calls settled. */
  credits: count,
  temporal_url: temporalUrl,
});

export const attemptSchema = z.strictObject({
  attempt: count,
  model: z.string(),
  provider: z.string(),
  outcome: z.string(),
  latency_ms: z.number(),
  status: count.optional(),
  error: z.string().optional(),
});

const workflowState = z.strictObject({
  status: z.string().meta({ description: 'Temporal’s: running, completed, failed, …' }),
  run_id: z.string(),
  started_at: isoDate,
  closed_at: nullableDate,
  history_length: count,
  temporal_url: temporalUrl,
});

export const turnTraceSchema = turnSummarySchema.extend({
  routing_workflow_id: z.string().nullable(),
  /**
   * The tools the turn called, in order (names only: the console shows what ran, not what was said); `ok` from the
   * workflow's own trace when it could be read.
   */
  tool_calls: z.array(z.strictObject({ name: z.string(), ok: z.boolean().nullable() })),
  /** The credit ledger's entries of the turn's model calls and of its routing call. */
  ledger: z.array(ledgerEntrySchema),
  /** The workflow as Temporal has it; null once Temporal no longer keeps it (past the namespace's retention). */
  workflow: workflowState.nullable(),
  /** Each provider attempt of the turn's model calls (provider, outcome, latency), from the workflow’s trace query. */
  attempts: z.array(attemptSchema).nullable(),
  pending_approval: z.strictObject({ approval_id: z.string(), tool: z.string(), expires_at: isoDate }).nullable(),
  /** Why `attempts` is null, when it is. */
  trace_error: z.string().nullable(),
});

export const requestSummarySchema = z.strictObject({
  request_id: z.string(),
  workflow_id: z.string(),
  run_id: z.string(),
  status: z.string(),
  user_id: z.string().nullable(),
  model: z.string().nullable(),
  started_at: isoDate,
  closed_at: nullableDate,
  temporal_url: temporalUrl,
});

export const failedWorkflowSchema = z.strictObject({
  workflow_id: z.string(),
  run_id: z.string(),
  type: z.string(),
  kind: z.string().nullable().meta({ description: 'TesseraKind: completion, chat-turn, agent-turn, …' }),
  user_id: z.string().nullable(),
  status: z.enum(['failed', 'timed_out']),
  started_at: isoDate,
  closed_at: isoDate,
  /** The failure's message, from the workflow's closing event. */
  failure: z.string().nullable(),
  temporal_url: temporalUrl,
});

export const failedAnswerSchema = z.strictObject({
  since: isoDate,
  workflows: z.array(failedWorkflowSchema),
});

const circuit = z.strictObject({
  state: z.enum(['closed', 'open', 'half_open']),
  consecutive_failures: count,
  opened_at: nullableDate,
  probe_started_at: nullableDate,
  last_error: z.string().nullable(),
});

/**
 * `healthy` (breaker closed, no failure since the last success), `degraded` (closed, with recent failures),
 * `probing` (half-open: one trial call allowed), `down` (open: skipped by failover), `disabled` (no key configured).
 */
export const healthSchema = z.enum(['healthy', 'degraded', 'probing', 'down', 'disabled']);

export const queueAnswerSchema = z.strictObject({
  groups: z.array(
    z.strictObject({
      kind: z.string(),
      model: z.string(),
      priority: z.string(),
      plan: z.string(),
      waiting: z.number().int(),
      holding: z.number().int(),
      oldest_wait_seconds: z.number().int(),
    }),
  ),
});

export const providersAnswerSchema = z.strictObject({
  providers: z.array(
    z.strictObject({
      id: z.string(),
      name: z.string(),
      protocol: z.string(),
      enabled: z.boolean(),
      models: z.array(z.string()),
      health: healthSchema,
      circuit,
    }),
  ),
  media_engines: z.array(
    z.strictObject({ id: z.string(), capabilities: z.array(z.string()), health: healthSchema, circuit }),
  ),
  breaker: z.strictObject({ failure_threshold: count, cooldown_ms: count }),
});

export const overviewSchema = z.strictObject({
  days: count,
  since: isoDate,
  generated_at: isoDate,
  totals: z.strictObject({
    messages: count,
    turns: count,
    failed_turns: count,
    tool_calls: count,
    credits_used: count,
  }),
  schedules: z.strictObject({
    total: count,
    active: count,
    paused: count,
    last_run_by_status: z.record(z.string(), count),
  }),
  media_jobs: z.strictObject({ by_status: z.record(z.string(), count) }),
  /** Null where this deployment has no inbound webhooks (no `webhook_runs` table). */
  webhook_runs: z.strictObject({ by_status: z.record(z.string(), count) }).nullable(),
});

export type UserSummary = z.infer<typeof userSummarySchema>;
export type AuditEntry = z.infer<typeof auditEntrySchema>;
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;
export type TurnSummary = z.infer<typeof turnSummarySchema>;
export type TurnTrace = z.infer<typeof turnTraceSchema>;
export type RequestSummary = z.infer<typeof requestSummarySchema>;
export type FailedWorkflow = z.infer<typeof failedWorkflowSchema>;
export type Health = z.infer<typeof healthSchema>;
