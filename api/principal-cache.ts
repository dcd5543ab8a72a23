/**
 * Who each API key belongs to, cached in the process so a completion does not read the key and its account from
 * the database every time, yet dropped the moment that changes anywhere.
 *
 * Triggers (migration `principal-notifications`) send the user id on the `tessera_principals` channel when a key is
 * revoked or deleted or an account's plan or custom limits change; every replica LISTENs and forgets that user's
 * keys. The replica that makes a change also forgets at once, before it answers. The cache is used only while the
 * listening connection is up: it is emptied when that connection drops and refilled after it is back, so a missed
 * notification cannot leave a revoked key usable. Entries also expire after `ttlMs`, a bound on any other surprise.
 */
import pg from 'pg';
import type { Logger } from '../process/logger.ts';
import type { Principal } from './services/apikeys/service.ts';

export const principalsChannel = 'tessera_principals';

interface Entry {
  principal: Principal;
  cachedAt: number;
}

export interface PrincipalCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** Delay before reconnecting a dropped listener. */
  reconnectMs?: number;
}

export class PrincipalCache {
  private readonly databaseUrl: string;
  private readonly logger: Logger;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly reconnectMs: number;
  private readonly entries = new Map<string, Entry>();
  private readonly keysByUser = new Map<string, Set<string>>();
  private client: pg.Client | null = null;
  private listening = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** Bumped by every invalidation: a lookup that began before one must not cache what it read. */
  private generation = 0;

  constructor(databaseUrl: string, logger: Logger, options: PrincipalCacheOptions = {}) {
    this.databaseUrl = databaseUrl;
    this.logger = logger;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.reconnectMs = options.reconnectMs ?? 1_000;
  }

  /** Starts listening; until it does (or while it cannot), every lookup goes to the database. */
  async start(): Promise<void> {
    await this.listen();
  }

  /** The cached principal of a key (by its hash), if the cache may be trusted right now. */
  get(secretHash: string): Principal | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(secretHash);
    if (!entry) return undefined;
    if (Date.now() - entry.cachedAt > this.ttlMs) {
      this.entries.delete(secretHash);
      return undefined;
    }
    return entry.principal;
  }

  /** Taken before reading a key from the database, and handed back to `set`. */
  version(): number {
    return this.generation;
  }

  /** Caches what a lookup read, unless something was invalidated since it began (`version`). */
  set(secretHash: string, principal: Principal, version: number): void {
    if (!this.listening || version !== this.generation) return;
    if (this.entries.size >= this.maxEntries) this.clear();
    this.entries.set(secretHash, { principal, cachedAt: Date.now() });
    let keys = this.keysByUser.get(principal.userId);
    if (!keys) this.keysByUser.set(principal.userId, (keys = new Set()));
    keys.add(secretHash);
  }

  /** Drops every cached key of a user (their key was revoked, their plan or limits changed). */
  forget(userId: string): void {
    this.generation++;
    for (const hash of this.keysByUser.get(userId) ?? []) this.entries.delete(hash);
    this.keysByUser.delete(userId);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
    this.keysByUser.clear();
  }

  private async listen(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5_000 });
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      this.listening = false;
      this.clear();
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.logger.warn(
        { err: error },
        'principal cache: listener lost, reading keys from the database until it is back',
      );
      this.reconnectTimer = setTimeout(() => void this.listen(), this.reconnectMs);
      this.reconnectTimer.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.channel === principalsChannel && message.payload) this.forget(message.payload);
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`listen ${principalsChannel}`);
      if (this.client !== client) return;
      // Whatever changed while nobody listened is unknown: start empty.
      this.clear();
      this.listening = true;
    } catch (error) {
      lost(error as Error);
    }
  }
}
