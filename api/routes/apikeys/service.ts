/**
 * API keys (spec 4.7): `te_` + 32 random bytes; only the SHA-256 is stored. Revocation sets `revoked_at`,
 * and every request re-reads the key, so a revoked key fails on its next use on every replica.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PlanName } from '../../../common/plans.ts';
import type { AccountPlans } from '../../../activities/credits/accounts.ts';
import { ApiKey, User } from '../../../db/entities/index.ts';

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

export class ApiKeyService {
  private readonly orm: MikroORM;
  private readonly masterKeyHash: Buffer | null;

  private readonly accounts: AccountPlans;

  constructor(orm: MikroORM, masterKey: string | undefined, accounts: AccountPlans) {
    this.orm = orm;
    this.accounts = accounts;
    this.masterKeyHash = masterKey ? createHash('sha256').update(masterKey).digest() : null;
  }

  /** The principal a bearer secret belongs to, or null. */
  async authenticate(secret: string): Promise<Principal | null> {
    if (!secret.startsWith(keyPrefix)) return null;
    const digest = createHash('sha256').update(secret).digest();
    if (this.masterKeyHash && timingSafeEqual(digest, this.masterKeyHash)) {
      return { userId: 'operator', keyId: null, operator: true, plan: 'business', customLimits: null };
    }
    const em = this.orm.em.fork();
    const rows = await em.execute<
      Array<{
        id: string;
        user_id: string;
        last_used_at: string | Date | null;
        plan: PlanName;
        custom_limits: CustomLimits | null;
      }>
    >(
      `select k.id, k.user_id, k.last_used_at, u.plan, u.custom_limits
       from api_keys k join users u on u.id = k.user_id
       where k.secret_hash = ? and k.revoked_at is null`,
      [digest.toString('hex')],
    );
    const row = rows[0];
    if (!row) return null;
    if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > lastUsedResolutionMs) {
      await em.execute('update api_keys set last_used_at = now() where id = ?', [row.id], 'run');
    }
    return { userId: row.user_id, keyId: row.id, operator: false, plan: row.plan, customLimits: row.custom_limits };
  }

  /**
   * Finds the user by e-mail or creates one (a new user without e-mail gets a fresh id). A new account
   * starts its first plan cycle at once, with that plan's monthly credits.
   */
  async ensureUser(options: { userId?: string; email?: string; plan?: PlanName }) {
    const em = this.orm.em.fork();
    if (options.userId) {
      const user = await em.findOne(User, { id: options.userId });
      if (user) return user;
    }
    if (options.email) {
      const user = await em.findOne(User, { email: options.email });
      if (user) return user;
    }
    const plan = options.plan ?? 'free';
    const user = em.create(User, {
      id: options.userId ?? newId('user'),
      email: options.email ?? null,
      plan,
      createdAt: new Date(),
    });
    await em.flush();
    await this.accounts.startCycle(user.id, plan, user.createdAt, 'account created');
    return user;
  }

  async create(userId: string, name: string | null) {
    const em = this.orm.em.fork();
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
    await em.flush();
    return { key, secret };
  }

  async list(userId: string) {
    return this.orm.em.fork().find(ApiKey, { user: userId, revokedAt: null }, { orderBy: { createdAt: 'asc' } });
  }

  /** Revokes one of the user's keys; false when the user has no such live key. */
  async revoke(userId: string, keyId: string): Promise<boolean> {
    const em = this.orm.em.fork();
    const key = await em.findOne(ApiKey, { id: keyId, user: userId, revokedAt: null });
    if (!key) return false;
    key.revokedAt = new Date();
    await em.flush();
    return true;
  }
}
