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
   * Holds `amount` credits for an attempt if the available balance covers it. One statement: the account's
   * conditional UPDATE is the check (concurrent reservations serialise on the row lock and never overdraw),
   * and the ledger row is inserted only from that update, so both happen or neither. A second reservation of
   * the same key finds the row and changes nothing; two racing ones collide on the key and one fails whole.
   */
  async reserve(
    key: AttemptKey & { amount: number; model: string },
  ): Promise<{ ok: true } | { ok: false; available: number }> {
    const entryKey = attemptKey(key, 'reserve');
    try {
      const [row] = await this.orm.em
        .fork()
        .execute<Array<{ reserved: boolean; existed: boolean; available: number | null }>>(
          `with account as (
           update users set credits_held = credits_held + ?
           where id = ? and credits_balance - credits_held >= ?
             and not exists (select 1 from credit_ledger where key = ?)
           returning id
         ), entry as (
           insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, estimated, created_at)
           select ?, id, 'reserve', ?, ?, ?, ?, false, now() from account
           returning id
         )
         select exists (select 1 from entry) as reserved,
                exists (select 1 from credit_ledger where key = ?) as existed,
                (select credits_balance - credits_held from users where id = ?) as available`,
          [
            key.amount,
            key.userId,
            key.amount,
            entryKey,
            entryKey,
            key.amount,
            key.workflowId,
            key.attempt,
            key.model,
            entryKey,
            key.userId,
          ],
        );
      if (row?.reserved || row?.existed) return { ok: true };
      return { ok: false, available: Number(row?.available ?? 0) };
    } catch (error) {
      if ((error as { code?: string }).code === '23505' || /unique/i.test(String(error))) return { ok: true };
      throw error;
    }
  }

  /** Charges the real usage and lifts the attempt's hold, once (one statement). */
  async settle(
    key: AttemptKey & {
      amount: number;
      model: string;
      promptTokens: number;
      completionTokens: number;
      estimated: boolean;
    },
  ): Promise<void> {
    await this.orm.em.fork().execute(
      `with held as (
         select coalesce((select amount from credit_ledger where key = ?
           and not exists (select 1 from credit_ledger where key = ?)), 0) as amount
       ), entry as (
         insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens, completion_tokens, estimated, created_at)
         values (?, ?, 'settle', ?, ?, ?, ?, ?, ?, ?, now())
         on conflict (key) do nothing returning id
       )
       update users set credits_balance = credits_balance - ?, credits_held = credits_held - (select amount from held)
       where id = ? and exists (select 1 from entry)`,
      [
        attemptKey(key, 'reserve'),
        attemptKey(key, 'release'),
        attemptKey(key, 'settle'),
        key.userId,
        key.amount,
        key.workflowId,
        key.attempt,
        key.model,
        key.promptTokens,
        key.completionTokens,
        key.estimated,
        key.amount,
        key.userId,
      ],
      'run',
    );
  }

  /** Lifts the hold of an attempt that served nothing, once (one statement). */
  async release(key: AttemptKey): Promise<void> {
    await this.orm.em.fork().execute(
      `with held as (
         select amount from credit_ledger where key = ?
           and not exists (select 1 from credit_ledger where key in (?, ?))
       ), entry as (
         insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, estimated, created_at)
         select ?, ?, 'release', amount, ?, ?, false, now() from held
         on conflict (key) do nothing returning amount
       )
       update users set credits_held = credits_held - (select amount from entry)
       where id = ? and exists (select 1 from entry)`,
      [
        attemptKey(key, 'reserve'),
        attemptKey(key, 'settle'),
        attemptKey(key, 'release'),
        attemptKey(key, 'release'),
        key.userId,
        key.workflowId,
        key.attempt,
        key.userId,
      ],
      'run',
    );
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
