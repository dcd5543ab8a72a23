import { defineEntity, p } from '@mikro-orm/core';

/**
 * The operator console's audit log: one row per operator action (a credit adjustment, a key made by the master key or
 * the shell, a key revocation, a plan or limits change, a role granted or taken back from a shell), written by the statement or transaction that does the
 * action (api/services/admin/audit.ts), so an action that rolls back leaves no row and a row that cannot be written
 * rolls the action back.
 *
 * Append-only, and the database says so: a trigger refuses every UPDATE and DELETE of a row, and another TRUNCATE of
 * the table, whoever sends them (the code has no such path either); only dropping a trigger, a schema change, gets
 * past them. The TRUNCATE trigger is the migration's alone (`admin-audit`): MikroORM reads triggers from
 * `information_schema.triggers`, which lists no TRUNCATE trigger, so declared here it would show as drift forever.
 * No foreign key to `users`: the record outlives whatever happens to the account.
 */
export const AdminAuditEntry = defineEntity({
  name: 'AdminAuditEntry',
  tableName: 'admin_audit',
  properties: {
    id: p.bigint().primary().autoincrement(),
    at: p.datetime().defaultRaw('now()'),
    /** Who: an admin's user id, `master-key` (MASTER_KEY) or `shell` (`npm run admin`). */
    actor: p.string(),
    /** The admin's address when they acted (null for the master key and the shell). */
    actorEmail: p.string().nullable(),
    /** What: `credits.adjust`, `key.create`, `key.revoke`, `account.update`, `role.grant`, `role.revoke`. */
    action: p.string(),
    /** To whom: the account acted on. */
    targetUserId: p.string().nullable(),
    /** Why, in the operator's words; required by the console, optional on the gateway's and the shell's doors. */
    reason: p.text().nullable(),
    /** The action's particulars: the amount and ledger entry, the key (never its secret), the plan and limits. */
    details: p.json<Record<string, unknown>>(),
    /** The request's `X-Request-Id` (null for the shell): the same id is in the request's log line and trace. */
    requestId: p.string().nullable(),
  },
  // One user's entries newest first (the console's user page, `GET /admin/api/audit?user_id=`).
  indexes: [{ properties: ['targetUserId', 'id'] }],
  triggers: [
    {
      name: 'admin_audit_append_only',
      timing: 'before',
      events: ['update', 'delete'],
      body: `raise exception 'admin_audit is append-only: % refused', tg_op using errcode = 'insufficient_privilege';`,
    },
  ],
});
