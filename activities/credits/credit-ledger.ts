/**
 * The credit ledger: the one place credits move. Every movement is an append-only ledger row with an
 * idempotency key, and the account's balance and hold change in the same transaction, so they always equal
 * the ledger's sums. A duplicate key (a retry, a replay, a second delivery) changes nothing.
 *
 * The completion saga: `reserve` the worst case before any upstream call (the only step that can refuse),
 * then `settle` the real usage at the serving model's rate, or `release` the hold when the attempt failed.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { run, type Pool } from '../../db/pool.ts';

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

export interface Reservation extends AttemptKey {
  amount: number;
  model: string;
}

export type ReservationOutcome = { ok: true } | { ok: false; available: number };

/**
 * The reservation as two CTEs, `account` and `entry`, for a statement that reserves along with other work (the
 * API admits a completion's rate-limit windows and its first hold in one statement). Its parameters are
 * `$first`…`$first+5` in the order of `reservationValues`; `guard` is SQL that must hold for anything to change.
 * The account's conditional UPDATE is the check: concurrent reservations serialise on the row lock and never
 * overdraw, and the ledger row is inserted only from that update, so both happen or neither.
 */
export function reservationCtes(first: number, guard = 'true'): string {
  const [user, amount, entryKey, workflow, attempt, model] = [0, 1, 2, 3, 4, 5].map((offset) => `$${first + offset}`);
  return `account as (
      update users set credits_held = credits_held + ${amount}::int
      where id = ${user}::text and credits_balance - credits_held >= ${amount}::int
        and not exists (select 1 from credit_ledger where key = ${entryKey}::text)
        and (${guard})
      returning id
    ), entry as (
      insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, estimated, created_at)
      select ${entryKey}::text, id, 'reserve', ${amount}::int, ${workflow}::text, ${attempt}::int, ${model}::text, false, now()
      from account
      returning id
    )`;
}

/** The columns a statement built on `reservationCtes(first)` selects to read the outcome back. */
export function reservationOutcomeColumns(first: number): string {
  return `exists (select 1 from entry) as reserved,
      exists (select 1 from credit_ledger where key = $${first + 2}::text) as existed,
      (select credits_balance - credits_held from users where id = $${first}::text) as available`;
}

export function reservationValues(reservation: Reservation): unknown[] {
  return [
    reservation.userId,
    reservation.amount,
    attemptKey(reservation, 'reserve'),
    reservation.workflowId,
    reservation.attempt,
    reservation.model,
  ];
}

/** Reads a reservation's outcome from a row with `reservationOutcomeColumns`. */
export function reservationOutcome(row: {
  reserved: boolean;
  existed: boolean;
  available: number | null;
}): ReservationOutcome {
  // Reserved now, or by an earlier run of the same attempt (a retry): either way the hold exists.
  if (row.reserved || row.existed) return { ok: true };
  return { ok: false, available: Number(row.available ?? 0) };
}

const reserveStatement = {
  name: 'ledger-reserve',
  text: `with ${reservationCtes(1)} select ${reservationOutcomeColumns(1)}`,
};

const settleStatement = {
  name: 'ledger-settle',
  text: `with held as (
      select coalesce((select amount from credit_ledger where key = $1::text
        and not exists (select 1 from credit_ledger where key = $2::text)), 0) as amount
    ), entry as (
      insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens,
                                 completion_tokens, estimated, created_at)
      values ($3::text, $4::text, 'settle', $5::int, $6::text, $7::int, $8::text, $9::int, $10::int, $11::boolean, now())
      on conflict (key) do nothing returning id
    )
    update users set credits_balance = credits_balance - $5::int, credits_held = credits_held - (select amount from held)
    where id = $4::text and exists (select 1 from entry)`,
};

const releaseStatement = {
  name: 'ledger-release',
  text: `with held as (
      select amount from credit_ledger where key = $1::text
        and not exists (select 1 from credit_ledger where key in ($2::text, $3::text))
    ), entry as (
      insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, estimated, created_at)
      select $3::text, $4::text, 'release', amount, $5::text, $6::int, false, now() from held
      on conflict (key) do nothing returning amount
    )
    update users set credits_held = credits_held - (select amount from entry)
    where id = $4::text and exists (select 1 from entry)`,
};

export class CreditLedger {
  private readonly orm: MikroORM;
  private readonly pool: Pool | null;

  /**
   * `pool` serves the saga's statements (reserve, settle, release: every completion runs them); a ledger built
   * without one (a transaction-scoped ledger for grants) can only credit and read.
   */
  constructor(orm: MikroORM, pool: Pool | null = null) {
    this.orm = orm;
    this.pool = pool;
  }

  private get hotPath(): Pool {
    if (!this.pool) throw new Error('this CreditLedger was built without a pool: it cannot reserve or settle');
    return this.pool;
  }

  /**
   * Holds `amount` credits for an attempt if the available balance covers it (see `reservationCtes`). A second
   * reservation of the same key finds the row and changes nothing; two racing ones collide on the key and one
   * fails whole.
   */
  async reserve(reservation: Reservation): Promise<ReservationOutcome> {
    try {
      const [row] = await run<{ reserved: boolean; existed: boolean; available: number | null }>(
        this.hotPath,
        reserveStatement,
        reservationValues(reservation),
      );
      return reservationOutcome(row!);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') return { ok: true };
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
    await run(this.hotPath, settleStatement, [
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
    ]);
  }

  /** Lifts the hold of an attempt that served nothing, once (one statement). */
  async release(key: AttemptKey): Promise<void> {
    await run(this.hotPath, releaseStatement, [
      attemptKey(key, 'reserve'),
      attemptKey(key, 'settle'),
      attemptKey(key, 'release'),
      key.userId,
      key.workflowId,
      key.attempt,
    ]);
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
