/**
 * The credit ledger: the one place credits move. Every movement is an append-only ledger row with an
 * idempotency key, and the account's balance and hold change in the same transaction, so they always equal
 * the ledger's sums. A duplicate key (a retry, a replay, a second delivery) changes nothing.
 *
 * The completion saga: `reserve` the worst case before any upstream call (the only step that can refuse),
 * then `settle` the real usage at the serving model's rate, or `release` the hold when the attempt failed.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

export interface AttemptKey {
  userId: string;
  workflowId: string;
  attempt: number;
}

export interface Balance {
  balance: number;
  held: number;
  available: number;
  used: number;
}

type Executor = MikroORM['em'];

const attemptKey = (key: AttemptKey, kind: string) => `${key.workflowId}#${key.attempt}:${kind}`;

export class CreditLedger {
  private readonly orm: MikroORM;

  constructor(orm: MikroORM) {
    this.orm = orm;
  }

  /**
   * Holds `amount` credits for an attempt if the available balance covers it. The account row's update is
   * the check, so concurrent reservations for one account serialise on its row lock and never overdraw.
   */
  async reserve(
    key: AttemptKey & { amount: number; model: string },
  ): Promise<{ ok: true } | { ok: false; available: number }> {
    return this.orm.em
      .fork()
      .transactional(async (em) => {
        const inserted = await insertEntry(em, {
          key: attemptKey(key, 'reserve'),
          userId: key.userId,
          kind: 'reserve',
          amount: key.amount,
          workflowId: key.workflowId,
          attempt: key.attempt,
          model: key.model,
        });
        if (!inserted) return { ok: true as const }; // reserved before: this is a retry or a replay
        const updated = await em.execute<Array<{ id: string }>>(
          `update users set credits_held = credits_held + ? where id = ? and credits_balance - credits_held >= ? returning id`,
          [key.amount, key.userId, key.amount],
        );
        if (updated.length === 1) return { ok: true as const };
        const [account] = await em.execute<Array<{ available: number }>>(
          'select credits_balance - credits_held as available from users where id = ?',
          [key.userId],
        );
        // Throwing rolls the reservation row back with the transaction.
        throw new InsufficientCredits(Number(account?.available ?? 0));
      })
      .catch((error: unknown) => {
        if (error instanceof InsufficientCredits) return { ok: false as const, available: error.available };
        throw error;
      });
  }

  /** Charges the real usage and lifts the attempt's hold. */
  async settle(
    key: AttemptKey & {
      amount: number;
      model: string;
      promptTokens: number;
      completionTokens: number;
      estimated: boolean;
    },
  ): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const held = await heldFor(em, key);
      const inserted = await insertEntry(em, {
        key: attemptKey(key, 'settle'),
        userId: key.userId,
        kind: 'settle',
        amount: key.amount,
        workflowId: key.workflowId,
        attempt: key.attempt,
        model: key.model,
        promptTokens: key.promptTokens,
        completionTokens: key.completionTokens,
        estimated: key.estimated,
      });
      if (!inserted) return;
      await em.execute(
        'update users set credits_balance = credits_balance - ?, credits_held = credits_held - ? where id = ?',
        [key.amount, held, key.userId],
        'run',
      );
    });
  }

  /** Lifts the hold of an attempt that served nothing. */
  async release(key: AttemptKey): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const held = await heldFor(em, key);
      if (held === 0) return;
      const inserted = await insertEntry(em, {
        key: attemptKey(key, 'release'),
        userId: key.userId,
        kind: 'release',
        amount: held,
        workflowId: key.workflowId,
        attempt: key.attempt,
      });
      if (!inserted) return;
      await em.execute('update users set credits_held = credits_held - ? where id = ?', [held, key.userId], 'run');
    });
  }

  /** Adds credits (monthly grant, purchase, operator adjustment) once per key. */
  async credit(entry: {
    userId: string;
    key: string;
    kind: 'grant' | 'purchase' | 'adjust';
    amount: number;
    note?: string;
  }): Promise<boolean> {
    return this.orm.em.fork().transactional(async (em) => {
      const inserted = await insertEntry(em, { ...entry });
      if (inserted) {
        await em.execute(
          'update users set credits_balance = credits_balance + ? where id = ?',
          [entry.amount, entry.userId],
          'run',
        );
      }
      return inserted;
    });
  }

  async balance(userId: string): Promise<Balance | null> {
    const [row] = await this.orm.em
      .fork()
      .execute<Array<{ balance: number; held: number; used: string | number | null }>>(
        `select u.credits_balance as balance, u.credits_held as held,
              (select coalesce(sum(amount), 0) from credit_ledger where user_id = u.id and kind = 'settle') as used
       from users u where u.id = ?`,
        [userId],
      );
    if (!row) return null;
    return { balance: row.balance, held: row.held, available: row.balance - row.held, used: Number(row.used ?? 0) };
  }
}

class InsufficientCredits extends Error {
  readonly available: number;

  constructor(available: number) {
    super('insufficient credits');
    this.available = available;
  }
}

/** What is still held for an attempt: its reservation, unless settled or released already. */
async function heldFor(em: Executor, key: AttemptKey): Promise<number> {
  const rows = await em.execute<Array<{ kind: string; amount: number }>>(
    'select kind, amount from credit_ledger where key in (?, ?, ?)',
    [attemptKey(key, 'reserve'), attemptKey(key, 'settle'), attemptKey(key, 'release')],
  );
  if (rows.some((row) => row.kind !== 'reserve')) return 0;
  return rows.find((row) => row.kind === 'reserve')?.amount ?? 0;
}

async function insertEntry(
  em: Executor,
  entry: {
    key: string;
    userId: string;
    kind: string;
    amount: number;
    workflowId?: string;
    attempt?: number;
    model?: string;
    promptTokens?: number;
    completionTokens?: number;
    estimated?: boolean;
    note?: string;
  },
): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens, completion_tokens, estimated, note, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
     on conflict (key) do nothing returning id`,
    [
      entry.key,
      entry.userId,
      entry.kind,
      entry.amount,
      entry.workflowId ?? null,
      entry.attempt ?? null,
      entry.model ?? null,
      entry.promptTokens ?? null,
      entry.completionTokens ?? null,
      entry.estimated ?? false,
      entry.note ?? null,
    ],
  );
  return rows.length === 1;
}
