/**
 * Who operates this deployment: who may use the operator console (`/admin` in the web app, its API under
 * `/admin/api/`; docs/web-app.md, "Operator console").
 *
 * - The master key (MASTER_KEY), sent as `Authorization: Bearer`: scripts and tools. It has no account.
 * - A person logged in with the session cookie whose account has the `admin` role (`users.role`, granted and revoked
 *   from a shell: `npm run admin -- grant-admin --email …`, `revoke-admin`), or whose address is in ADMIN_EMAILS (a
 *   deployment configured from its environment alone).
 *
 * An admin's API keys are not operator keys: a key is for programs, gets pasted into tools and can leak, so the
 * console's powers (moving anyone's credits, revoking anyone's keys, reading the platform's traces) stay with a person
 * in a browser, or with the master key. Nor does the role make the person's principal an operator elsewhere: their
 * own chats, keys and credits are metered and limited like everyone's.
 *
 * Anyone else gets 403 `permission_denied` from every console route (401 without any credential). Not 404: the routes
 * are listed in the service's public OpenAPI document and the web app's code, so a 404 would hide nothing, and a 403
 * says what is wrong.
 */
import { normalizeEmail } from '../../../common/email.ts';
import { run, statementVariants, type Pool } from '../../../db/pool.ts';
import { auditWrite, shellActor } from './audit.ts';
import { requireCaller, type CallerState } from '../../auth.ts';
import { ApiError } from '../../errors.ts';

export const roles = ['user', 'admin'] as const;
export type Role = (typeof roles)[number];

/** The operator behind a console request, and how the console's writes name them (the ledger's notes). */
export interface Operator {
  via: 'master_key' | 'admin';
  /** The admin's account; null for the master key. */
  userId: string | null;
  email: string | null;
  /** Who did it, in an adjustment's note: the admin's address (or id when the address is long), or "the master key". */
  label: string;
}

/** Whether an account is an admin: its role, or its address in ADMIN_EMAILS (`adminEmails` normalised). */
export function isAdminAccount(account: { role: string; email: string | null }, adminEmails: Set<string>): boolean {
  return account.role === 'admin' || (account.email !== null && adminEmails.has(account.email));
}

/** ADMIN_EMAILS as the accounts store addresses (common/email.ts). */
export function adminEmailSet(addresses: string[]): Set<string> {
  return new Set(addresses.map((address) => normalizeEmail(address)));
}

export class Operators {
  private readonly pool: Pool;
  private readonly adminEmails: Set<string>;

  constructor(pool: Pool, adminEmails: string[]) {
    this.pool = pool;
    this.adminEmails = adminEmailSet(adminEmails);
  }

  /** The operator making this request; 401 without a caller, 403 for a caller who is not one. */
  async require(state: CallerState): Promise<Operator> {
    const principal = requireCaller(state);
    if (principal.operator) return { via: 'master_key', userId: null, email: null, label: 'the master key' };
    if (state.via === 'cookie') {
      const { rows } = await this.pool.query<{ role: string; email: string | null }>(
        'select role, email from users where id = $1',
        [principal.userId],
      );
      const account = rows[0];
      if (account && isAdminAccount(account, this.adminEmails)) {
        const label = account.email && account.email.length <= 60 ? account.email : principal.userId;
        return { via: 'admin', userId: principal.userId, email: account.email, label };
      }
    }
    throw new ApiError(
      'permission_denied',
      state.via === 'key'
        ? 'The operator console takes the master key, or an admin’s login in the browser; an account’s API key is not enough'
        : 'You are not an operator of this deployment: the console is for accounts with the admin role',
    );
  }
}

/**
 * Sets an account's role (`npm run admin -- grant-admin|revoke-admin --email … [--reason …]`); the account by its
 * address, which is normalised first. Null when there is no such account (a person logs in once before they can be
 * made an admin). Recorded in the audit log as the shell's (`role.grant` or `role.revoke`, the role before and after),
 * by the same statement.
 */
export async function setRole(
  pool: Pool,
  email: string,
  role: Role,
  reason: string | null = null,
): Promise<{ user_id: string; email: string; role: Role } | null> {
  const audit = auditWrite(
    role === 'admin' ? 'role.grant' : 'role.revoke',
    { actor: shellActor, reason, requestId: null },
    {
      from: 'changed',
      target: 'changed.id',
      details: { after: role },
      fromDetails: `jsonb_build_object('before', changed.before)`,
    },
  );
  const rows = await run<{ id: string; email: string }>(pool, setRoleStatementWith(audit), [
    normalizeEmail(email),
    role,
    ...audit.values,
  ]);
  return rows[0] ? { user_id: rows[0].id, email: rows[0].email, role } : null;
}

/** The role set by address, the old one read under the row's lock (`before`); a write riding from `$3`. */
const setRoleStatementWith = statementVariants((alongside) => ({
  name: `admin-set-role+${alongside.name}`,
  text: `with target as (
      select id, role from users where email = $1::text for update
    ), changed as (
      update users u set role = $2::text from target where u.id = target.id
      returning u.id, u.email, target.role as before
    ), ${alongside.cte(3)}
    select id, email from changed`,
}));

/** The accounts with the admin role (`npm run admin -- list-admins`). */
export async function listAdmins(pool: Pool): Promise<Array<{ user_id: string; email: string | null }>> {
  const { rows } = await pool.query<{ id: string; email: string | null }>(
    "select id, email from users where role = 'admin' order by email, id",
  );
  return rows.map((row) => ({ user_id: row.id, email: row.email }));
}
