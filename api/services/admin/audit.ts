/**
 * The operator console's audit log (`admin_audit`, db/entities/admin-audit.entity.ts): who did what to whom, when, why
 * and in which request, for every operator action. The row is written by the action itself, never after it:
 *
 * - an action that is one statement (a credit adjustment, `CreditLedger.adjust`; a key revocation,
 *   `ApiKeyService.revoke`; a role change, `setRole`) carries the row as a data-modifying CTE (`auditWrite`) that
 *   inserts one row per row the action's own CTE changed: an adjustment replayed by its Idempotency-Key, or a key
 *   already revoked, changes nothing and records nothing, and a row that cannot be written fails the statement whole;
 * - an action that is a transaction (a plan or limits change, `AccountService.update`; a key made by the master key
 *   or the shell, with its account when new, `ApiKeyService.createForOperator`) inserts the row in that transaction
 *   (`recordAudit`).
 *
 * Append-only: nothing here (or anywhere) updates or deletes a row, and the table's trigger refuses it.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { run, type Pool, type RidingWrite } from '../../../db/pool.ts';
import type { AuditEntry } from '../../agents/routes/admin/schema.ts';
import type { Operator } from './operators.ts';

export const auditActions = [
  'credits.adjust',
  'key.create',
  'key.revoke',
  'account.update',
  'role.grant',
  'role.revoke',
] as const;
export type AuditAction = (typeof auditActions)[number];

/** An operator's reason for an action, as every door that takes one validates it (trimmed, 1 to 200 characters). */
export const auditReasonSchema = z
  .string('give the reason, for the audit log')
  .trim()
  .min(1, 'give the reason, for the audit log')
  .max(200, 'at most 200 characters');

/** Who acted: an admin's user id (with their address), `master-key`, or `shell` (`npm run admin`). */
export interface Actor {
  id: string;
  email: string | null;
}

export const masterKeyActor: Actor = { id: 'master-key', email: null };
export const shellActor: Actor = { id: 'shell', email: null };

export function actorOf(operator: Operator): Actor {
  return operator.via === 'admin' && operator.userId ? { id: operator.userId, email: operator.email } : masterKeyActor;
}

/** What an action's door knows of it before it runs: who asks, why, and the request's id. */
export interface AuditContext {
  actor: Actor;
  /** Null where the door does not ask for one (the gateway's PATCH and key creation, the shell without `--reason`). */
  reason: string | null;
  requestId: string | null;
}

/** The row's values a door knows before the action runs, in the order of `columns`' first six. */
function values(action: AuditAction, by: AuditContext, details: Record<string, unknown>): unknown[] {
  return [by.actor.id, by.actor.email, action, by.reason, by.requestId, JSON.stringify(details)];
}

const columns = 'actor, actor_email, action, reason, request_id, details, target_user_id, at';

/**
 * The audit row as a write riding in the action's statement (db/pool.ts, `RidingWrite`): the CTE `audit`, numbered
 * from its first parameter, inserting one row per row of the action's own CTE `rows.from` (what it changed: no row,
 * no record), to the account `rows.target` (SQL over that CTE's columns: the row the action changed names it), with
 * `rows.details` merged with `rows.fromDetails` (SQL over the CTE's columns, for what only the statement knows, as the
 * ledger entry's id). One statement variant per action (its name).
 */
export function auditWrite(
  action: AuditAction,
  by: AuditContext,
  rows: { from: string; target: string; details?: Record<string, unknown>; fromDetails?: string },
): RidingWrite {
  const extra = rows.fromDetails ? ` || ${rows.fromDetails}` : '';
  return {
    name: `audit-${action}`,
    cte: (first) => {
      const [actor, email, what, reason, request, details] = [0, 1, 2, 3, 4, 5].map((offset) => `$${first + offset}`);
      return `audit as (
        insert into admin_audit (${columns})
        select ${actor}::text, ${email}::text, ${what}::text, ${reason}::text, ${request}::text,
               ${details}::jsonb${extra}, ${rows.target}, now()
        from ${rows.from}
      )`;
    },
    values: values(action, by, rows.details ?? {}),
  };
}

/** Writes the row in the action's transaction (`em`: its EntityManager). */
export async function recordAudit(
  em: MikroORM['em'],
  action: AuditAction,
  by: AuditContext,
  targetUserId: string,
  details: Record<string, unknown>,
): Promise<void> {
  await em.execute(
    `insert into admin_audit (${columns}) values (?, ?, ?, ?, ?, ?::jsonb, ?, now())`,
    [...values(action, by, details), targetUserId],
    'run',
  );
}

interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  actor_email: string | null;
  action: string;
  target_user_id: string | null;
  user_email: string | null;
  reason: string | null;
  details: Record<string, unknown>;
  request_id: string | null;
}

/**
 * Newest first, `$4` entries older than entry `$3`, of one account (`$1`) and one action (`$2`) or any: the primary
 * key read backwards, or (one account) its (target_user_id, id) index.
 */
const auditStatement = {
  name: 'admin-audit',
  text: `select a.id::text, a.at, a.actor, a.actor_email, a.action, a.target_user_id, u.email as user_email, a.reason,
                a.details, a.request_id
         from admin_audit a left join users u on u.id = a.target_user_id
         where ($1::text is null or a.target_user_id = $1::text) and ($2::text is null or a.action = $2::text)
           and ($3::bigint is null or a.id < $3::bigint)
         order by a.id desc limit $4::int`,
};

/** A page of the log, newest first; `next_before` continues it (null on the last page). */
export async function readAudit(
  pool: Pool,
  query: { user_id?: string | undefined; action?: string | undefined; before?: string | undefined; limit: number },
): Promise<{ entries: AuditEntry[]; next_before: string | null }> {
  const rows = await run<AuditRow>(pool, auditStatement, [
    query.user_id ?? null,
    query.action ?? null,
    query.before ?? null,
    query.limit + 1,
  ]);
  const page = rows.slice(0, query.limit);
  return {
    entries: page.map((row) => ({
      id: row.id,
      at: new Date(row.at).toISOString(),
      actor: row.actor,
      actor_email: row.actor_email,
      action: row.action as AuditAction,
      user_id: row.target_user_id,
      user_email: row.user_email,
      reason: row.reason,
      details: row.details,
      request_id: row.request_id,
    })),
    next_before: rows.length > query.limit ? page[page.length - 1]!.id : null,
  };
}
