/**
 * Who each API key belongs to, cached in the process so a completion does not read the key and its account from
 * the database every time, yet dropped the moment that changes anywhere.
 *
 * Triggers (migration `principal-notifications`) send the user id on the `tessera_principals` channel when a key is
 * revoked or deleted or an account's plan or custom limits change; every replica LISTENs and forgets that user's
 * keys (through the process's one listening connection, db/listener.ts). The replica that makes a change also forgets
 * at once, before it answers. The cache is used only while the listening connection is up: it is emptied when that connection drops and refilled after it is back, so a missed
 * notification cannot leave a revoked key usable. Entries also expire after `ttlMs`, a bound on any other surprise.
 */
import type { PgListener } from '../db/listener.ts';
import type { Principal } from './services/apikeys/service.ts';

export const principalsChannel = 'tessera_principals';

interface Entry {
  principal: Principal;
  cachedAt: number;
}

export interface PrincipalCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
}

export class PrincipalCache {
  private readonly listener: PgListener;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly entries = new Map<string, Entry>();
  private readonly keysByUser = new Map<string, Set<string>>();
  private listening = false;
  /** Bumped by every invalidation: a lookup that began before one must not cache what it read. */
  private generation = 0;

  constructor(listener: PgListener, options: PrincipalCacheOptions = {}) {
    this.listener = listener;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  /** Listens on the process's listener; until it does (or while it cannot), every lookup goes to the database. */
  async start(): Promise<void> {
    await this.listener.subscribe(principalsChannel, {
      notify: (userId) => this.forget(userId),
      // Whatever changed while nobody listened is unknown: start empty.
      listening: () => {
        this.clear();
        this.listening = true;
      },
      lost: () => {
        this.listening = false;
        this.clear();
      },
    });
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

  /** Stops caching (the listener itself is the process's, closed with it). */
  close(): void {
    this.listening = false;
    this.clear();
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
    this.keysByUser.clear();
  }
}
