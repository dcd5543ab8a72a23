/**
 * API keys (spec 4.7): `te_` + 32 random bytes; only the SHA-256 is stored. Revocation sets `revoked_at`. A key's
 * principal is cached in each replica (api/principal-cache.ts) and dropped there the moment the key is revoked or
 * its account's plan or limits change, so a revoked key fails on its next use on every replica.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { normalizeEmail } from '../../../common/email.ts';
import type { PlanName } from '../../../common/plans.ts';
import type { AccountPlans } from '../../../activities/credits/accounts.ts';
import { ApiKey, User } from '../../../db/entities/index.ts';
import { run, statementVariants, type Pool, type RidingWrite } from '../../../db/pool.ts';
import type { PrincipalCache } from '../../principal-cache.ts';
import { recordAudit, type AuditContext } from '../admin/audit.ts';

export const keyPrefix = 'te_';
/** `last_used_at` is written at most this often per key, so authentication stays a read. */
const lastUsedResolutionMs = 60_000;

export interface Principal {
  userId: string;
  keyId: string | null;
  /** The operator (MASTER_KEY): may act for any user; no plan gating, no rate limit. */
  operator: boolean;
  plan: PlanName;
  /** Operator-set overrides (business accounts). */
  customLimits: CustomLimits | null;
}

export interface CustomLimits {
  per_hour?: number | null;
  per_day?: number | null;
  models?: string[] | 'all';
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function generateSecret(): string {
  return keyPrefix + randomBytes(32).toString('base64url');
}

export function previewOf(secret: string): string {
  return `${secret.slice(0, 7)}…${secret.slice(-4)}`;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

const keyLookup = {
  name: 'api-key-principal',
  text: `select k.id, k.user_id, k.last_used_at, u.plan, u.custom_limits
         from api_keys k join users u on u.id = k.user_id
         where k.secret_hash = $1 and k.revoked_at is null`,
};
const touchKey = { name: 'api-key-touch', text: 'update api_keys set last_used_at = now() where id = $1' };

const revokeCte = `revoked as (
    update api_keys set revoked_at = now() where id = $1::text and user_id = $2::text and revoked_at is null
    returning id, user_id, name, preview
  )`;
const revokeStatement = { name: 'api-key-revoke', text: `with ${revokeCte} select id from revoked` };
const revokeStatementWith = statementVariants((alongside) => ({
  name: `api-key-revoke+${alongside.name}`,
  text: `with ${revokeCte}, ${alongside.cte(3)} select id from revoked`,
}));

export interface ApiKeyServiceDependencies {
  orm: MikroORM;
  /** The hot-path pool (authentication runs on every request). */
  pool: Pool;
  masterKey: string | undefined;
  accounts: AccountPlans;
  /** Principals cached per key; absent: every request reads the database. */
  principals?: PrincipalCache;
}

export class ApiKeyService {
  private readonly orm: MikroORM;
  private readonly pool: Pool;
  private readonly masterKeyHash: Buffer | null;
  private readonly accounts: AccountPlans;
  private readonly principals: PrincipalCache | undefined;
  /** When each key's `last_used_at` was last written by this process. */
  private readonly touched = new Map<string, number>();

  constructor(dependencies: ApiKeyServiceDependencies) {
    this.orm = dependencies.orm;
    this.pool = dependencies.pool;
    this.accounts = dependencies.accounts;
    this.principals = dependencies.principals;
    this.masterKeyHash = dependencies.masterKey ? createHash('sha256').update(dependencies.masterKey).digest() : null;
  }

  /** The principal a bearer secret belongs to, or null. */
  async authenticate(secret: string): Promise<Principal | null> {
    if (!secret.startsWith(keyPrefix)) return null;
    const digest = createHash('sha256').update(secret).digest();
    if (this.masterKeyHash && timingSafeEqual(digest, this.masterKeyHash)) {
      return { userId: 'operator', keyId: null, operator: true, plan: 'business', customLimits: null };
    }
    const hash = digest.toString('hex');
    const cached = this.principals?.get(hash);
    if (cached) {
      this.touch(cached.keyId!, null);
      return cached;
    }
    const version = this.principals?.version() ?? 0;
    const [row] = await run<{
      id: string;
      user_id: string;
      last_used_at: Date | null;
      plan: PlanName;
      custom_limits: CustomLimits | null;
    }>(this.pool, keyLookup, [hash]);
    if (!row) return null;
    const principal: Principal = {
      userId: row.user_id,
      keyId: row.id,
      operator: false,
      plan: row.plan,
      customLimits: row.custom_limits,
    };
    this.principals?.set(hash, principal, version);
    this.touch(row.id, row.last_used_at);
    return principal;
  }

  /**
   * The principal a user acts as without a key: a messaging-app chat linked to the user's conversation is metered
   * and limited as the user (plan and custom limits), with no key. Null for an unknown user.
   */
  async principalForUser(userId: string): Promise<Principal | null> {
    const { rows } = await this.pool.query<{ plan: PlanName; custom_limits: CustomLimits | null }>(
      'select plan, custom_limits from users where id = $1',
      [userId],
    );
    const row = rows[0];
    return row ? { userId, keyId: null, operator: false, plan: row.plan, customLimits: row.custom_limits } : null;
  }

  /**
   * Records the key's use, at most once a minute per key and off the request's path: `last_used_at` is a
   * listing detail, not worth a write per request or a wait.
   */
  private touch(keyId: string, lastUsedAt: Date | null): void {
    const now = Date.now();
    const last = Math.max(this.touched.get(keyId) ?? 0, lastUsedAt ? new Date(lastUsedAt).getTime() : 0);
    if (now - last < lastUsedResolutionMs) return;
    this.touched.set(keyId, now);
    if (this.touched.size > 100_000) this.touched.clear();
    run(this.pool, touchKey, [keyId]).catch(() => this.touched.delete(keyId));
  }

  /**
   * Finds the user by e-mail or creates one (a new user without e-mail gets a fresh id). The address is normalised
   * first (common/email.ts), so every spelling of one address is one account. A new account starts its first plan
   * cycle at once, with that plan's monthly credits.
   */
  async ensureUser(options: { userId?: string; email?: string; plan?: PlanName }) {
    try {
      return (await this.openAccount(this.orm.em.fork(), this.accounts, options)).user;
    } catch (error) {
      // Another request made the account for this address since the read (a first login racing the operator's
      // key): the unique address keeps it one account, and that one is the caller's.
      if (!options.email || !(error instanceof UniqueConstraintViolationException)) throw error;
      const existing = await this.orm.em.fork().findOne(User, { email: normalizeEmail(options.email) });
      if (!existing) throw error;
      return existing;
    }
  }

  async create(userId: string, name: string | null) {
    const em = this.orm.em.fork();
    const created = this.newKey(em, userId, name);
    await em.flush();
    return created;
  }

  /**
   * The operator's key (the master key's `POST /api/v1/apikeys`, the shell's `create-key`): for the account of
   * `email`, found or made on `plan` (free by default; an account found keeps its plan: `AccountService.update`
   * changes plans), or for a new account without an address. One transaction: the account and its first cycle's grant
   * when new, the key, and the audit row (`key.create`, api/services/admin/audit.ts: the key's id, name and preview,
   * never its secret; whether the account was made, and its plan), so there is no key without its row and no row
   * without its key. When two make one new address's account at once, the loser's transaction fails on the unique
   * address, whole, and runs once more, finding the winner's account.
   */
  async createForOperator(request: { email?: string; plan?: PlanName; name: string | null }, by: AuditContext) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.orm.em.fork().transactional(async (em) => {
          const { user, created } = await this.openAccount(em, this.accounts.inTransaction(em), request);
          const { key, secret } = this.newKey(em, user.id, request.name);
          await em.flush();
          await recordAudit(em, 'key.create', by, user.id, {
            key_id: key.id,
            name: key.name,
            preview: key.preview,
            account_created: created,
            plan: user.plan,
          });
          return { user, key, secret };
        });
      } catch (error) {
        if (attempt >= 2 || !request.email || !(error instanceof UniqueConstraintViolationException)) throw error;
      }
    }
  }

  /**
   * The account of `userId` or `email`, or a new one on `plan` (free by default) with its first cycle started, in `em`
   * with `accounts` (both of one transaction, or neither). A new account's row is flushed before its cycle starts.
   */
  private async openAccount(
    em: MikroORM['em'],
    accounts: AccountPlans,
    options: { userId?: string; email?: string; plan?: PlanName },
  ) {
    const email = options.email === undefined ? undefined : normalizeEmail(options.email);
    if (options.userId) {
      const user = await em.findOne(User, { id: options.userId });
      if (user) return { user, created: false };
    }
    if (email) {
      const user = await em.findOne(User, { email });
      if (user) return { user, created: false };
    }
    const plan = options.plan ?? 'free';
    const user = em.create(User, {
      id: options.userId ?? newId('user'),
      email: email ?? null,
      plan,
      createdAt: new Date(),
    });
    await em.flush();
    await accounts.startCycle(user.id, plan, user.createdAt, 'account created');
    return { user, created: true };
  }

  /** A new key of the user's in `em`, written at its next flush; the secret is returned here once, never stored. */
  private newKey(em: MikroORM['em'], userId: string, name: string | null) {
    const secret = generateSecret();
    const key = em.create(ApiKey, {
      id: newId('key'),
      user: userId,
      name,
      secretHash: hashSecret(secret),
      preview: previewOf(secret),
      createdAt: new Date(),
      lastUsedAt: null,
      revokedAt: null,
    });
    return { key, secret };
  }

  async list(userId: string) {
    return this.orm.em.fork().find(ApiKey, { user: userId, revokedAt: null }, { orderBy: { createdAt: 'asc' } });
  }

  /**
   * Revokes one of the user's keys; false when the user has no such live key. One statement: `alongside`, a write
   * riding in it from `$3` (the operator's audit row, api/services/admin/audit.ts), may select `from revoked` (the
   * key's `id`, `user_id`, `name` and `preview`) to happen exactly when this call revoked the key.
   */
  async revoke(userId: string, keyId: string, alongside?: RidingWrite): Promise<boolean> {
    const revoked = await run(this.pool, alongside ? revokeStatementWith(alongside) : revokeStatement, [
      keyId,
      userId,
      ...(alongside?.values ?? []),
    ]);
    if (revoked.length === 0) return false;
    // Other replicas hear it from the database (principal-cache.ts); this one must not wait for that.
    this.principals?.forget(userId);
    return true;
  }
}
