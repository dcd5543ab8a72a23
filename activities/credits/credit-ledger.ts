/**
 * The credit ledger: the one place credits move. Every movement is an append-only ledger row with an
 * idempotency key, and the account's balance and hold change in the same transaction, so they always equal
 * the ledger's sums. A duplicate key (a retry, a replay, a second delivery) changes nothing.
 *
 * The completion saga: `reserve` the worst case before any upstream call (the only step that can refuse),
 * then `settle` the real usage at the serving model's rate, or `release` the hold when the attempt failed.
 * A reservation also writes its open hold (`credit_holds`, same key), and the settle or release that lifts it
 * deletes that row: the account's `credits_held` is the sum of its open holds, and the sweep of abandoned holds
 * (abandoned-holds.ts) finds them by age without reading the ledger.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { run, statementVariants, type Pool, type Queryable, type RidingWrite } from '../../db/pool.ts';

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
 * A write that rides in the statement of a reservation (the API's admission): a named data-modifying CTE, numbered
 * from its first parameter, which may select `from entry` (the ledger row the reservation inserted now) so that it
 * happens exactly when the reservation does; `alone` is the same write on its own, for a request that takes no hold
 * (the operator's) or is admitted without the statement. A Response's row is one (activities/responses/).
 */
export interface AdmittedWrite extends RidingWrite {
  alone(): Promise<void>;
}

/**
 * The reservation as two CTEs, `account` and `entry`, for a statement that reserves along with other work (the
 * API admits a completion's rate-limit windows and its first hold in one statement). Its parameters are
 * `$first`…`$first+5` in the order of `reservationValues`; `guard` is SQL that must hold for anything to change.
 * The account's conditional UPDATE is the check: concurrent reservations serialise on the row lock and never
 * overdraw, and the ledger row and the open hold are inserted only from that update, so all happen or none.
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
    ), hold as (
      insert into credit_holds (key, user_id, workflow_id, attempt, amount, created_at)
      select ${entryKey}::text, id, ${workflow}::text, ${attempt}::int, ${amount}::int, now() from account
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

/**
 * Charges the usage once (the settle row's key) and lifts the open hold, if any: one released already (by the
 * attempt's own saga or the sweep of abandoned holds) is charged without a hold to lift. Deleting the hold row is the
 * lift: of a settle and a release racing for one attempt, the second waits on the row and finds it gone.
 */
const settleCtes = `entry as (
      insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens,
                                 completion_tokens, estimated, created_at)
      values ($2::text, $3::text, 'settle', $4::int, $5::text, $6::int, $7::text, $8::int, $9::int, $10::boolean, now())
      on conflict (key) do nothing returning id
    ), held as (
      delete from credit_holds where key = $1::text and exists (select 1 from entry) returning amount
    )`;
const settleCharge = `update users set credits_balance = credits_balance - $4::int,
                     credits_held = credits_held - coalesce((select amount from held), 0)
    where id = $3::text and exists (select 1 from entry)`;
const settleStatement = { name: 'ledger-settle', text: `with ${settleCtes} ${settleCharge}` };

/**
 * A write that rides in an attempt's settlement statement: a named data-modifying CTE numbered from its first
 * parameter (11), happening whether or not the settlement was new (a Response's end: activities/responses/). One
 * statement instead of a transaction of two: no BEGIN and COMMIT round trips for a call that ends a stored Response.
 */
export type SettledWrite = RidingWrite;

// The settlement's steps as CTEs, then the write beside it.
const settleStatementWith = statementVariants((alongside) => ({
  name: `ledger-settle+${alongside.name}`,
  text: `with ${settleCtes}, charged as (${settleCharge} returning 1), ${alongside.cte(11)} select 1`,
}));

/** Lifts the open hold and records the release, once; nothing when the attempt was settled or released already. */
const releaseStatement = {
  name: 'ledger-release',
  text: `with held as (
      delete from credit_holds where key = $1::text returning amount
    ), entry as (
      insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, estimated, created_at)
      select $2::text, $3::text, 'release', amount, $4::text, $5::int, false, now() from held
      on conflict (key) do nothing
    )
    update users set credits_held = credits_held - (select amount from held)
    where id = $3::text and exists (select 1 from held)
    returning id`,
};

/**
 * Open holds older than `$1` milliseconds, a page of `$2` in key order after the key `$3` ending the previous page
 * (the table holds only open holds, so either index it has answers this cheaply; none aged: nothing read).
 */
const agedHoldsStatement = {
  name: 'ledger-aged-holds',
  text: `select key, user_id, workflow_id, attempt from credit_holds
    where created_at < now() - make_interval(secs => $1::double precision / 1000) and key > $3::text
    order by key
    limit $2::int`,
};

/**
 * An operator's adjustment (kind `adjust`): the balance moves by `$3` (negative: credits taken back) and the entry is
 * written with its note, once per key, in one statement. A debit never takes the available balance (balance less
 * what is held) below zero: the account's conditional UPDATE is the check, as for a reservation, and the entry is
 * inserted only from that update. The outcome columns are read from the statement's snapshot, before its changes:
 * `available` is what the account had.
 */
const adjustCtes = `account as (
      update users set credits_balance = credits_balance + $3::int
      where id = $1::text and ($3::int >= 0 or credits_balance - credits_held + $3::int >= 0)
        and not exists (select 1 from credit_ledger where key = $2::text)
      returning id, credits_balance, credits_held
    ), entry as (
      insert into credit_ledger (key, user_id, kind, amount, note, estimated, created_at)
      select $2::text, id, 'adjust', $3::int, $4::text, false, now() from account
      returning id, user_id, created_at
    )`;
const adjustOutcome = `select (select id from entry)::text as entry_id, (select created_at from entry) as created_at,
           (select credits_balance from account) as balance,
           (select credits_balance - credits_held from users where id = $1::text) as available_before`;
const adjustStatement = { name: 'ledger-adjust', text: `with ${adjustCtes} ${adjustOutcome}` };
/** The adjustment with a write riding in it (the operator's audit row: api/services/admin/audit.ts), from `$5`. */
const adjustStatementWith = statementVariants((alongside) => ({
  name: `ledger-adjust+${alongside.name}`,
  text: `with ${adjustCtes}, ${alongside.cte(5)} ${adjustOutcome}`,
}));

/** An open hold as `agedHolds` reads it; its `key` places it in the order of the pages. */
export interface OpenHold extends AttemptKey {
  key: string;
}

/** An operator's adjustment as the ledger wrote it. */
export interface AdjustmentEntry {
  id: string;
  userId: string;
  amount: number;
  note: string;
  createdAt: Date;
}

export type AdjustOutcome =
  | { outcome: 'adjusted'; entry: AdjustmentEntry; balance: number }
  | { outcome: 'replayed'; entry: AdjustmentEntry }
  | { outcome: 'short'; available: number }
  | { outcome: 'unknown' }
  | { outcome: 'overflow' };

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
   * fails whole. `on`: a transaction's client, to reserve along with the caller's other writes (a turn's opening).
   */
  async reserve(reservation: Reservation, on?: Queryable): Promise<ReservationOutcome> {
    try {
      const [row] = await run<{ reserved: boolean; existed: boolean; available: number | null }>(
        on ?? this.hotPath,
        reserveStatement,
        reservationValues(reservation),
      );
      return reservationOutcome(row!);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') return { ok: true };
      throw error;
    }
  }

  /**
   * Charges the real usage and lifts the attempt's hold, once (one statement; `on`: in the caller's transaction;
   * `alongside`: a write riding in the same statement).
   */
  async settle(
    key: AttemptKey & {
      amount: number;
      model: string;
      promptTokens: number;
      completionTokens: number;
      estimated: boolean;
    },
    on?: Queryable,
    alongside?: SettledWrite,
  ): Promise<void> {
    await run(on ?? this.hotPath, alongside ? settleStatementWith(alongside) : settleStatement, [
      attemptKey(key, 'reserve'),
      attemptKey(key, 'settle'),
      key.userId,
      key.amount,
      key.workflowId,
      key.attempt,
      key.model,
      key.promptTokens,
      key.completionTokens,
      key.estimated,
      ...(alongside?.values ?? []),
    ]);
  }

  /**
   * Lifts the hold of an attempt that served nothing, once (one statement; `on`: in the caller's transaction); true
   * when this call lifted it.
   */
  async release(key: AttemptKey, on?: Queryable): Promise<boolean> {
    const lifted = await run(on ?? this.hotPath, releaseStatement, [
      attemptKey(key, 'reserve'),
      attemptKey(key, 'release'),
      key.userId,
      key.workflowId,
      key.attempt,
    ]);
    return lifted.length > 0;
  }

  /** A page of the open holds older than `ageMs`, continuing after `afterKey` (the previous page's last key). */
  async agedHolds(ageMs: number, limit: number, afterKey = ''): Promise<OpenHold[]> {
    const rows = await run<{ key: string; user_id: string; workflow_id: string; attempt: number }>(
      this.hotPath,
      agedHoldsStatement,
      [ageMs, limit, afterKey],
    );
    return rows.map((row) => ({
      key: row.key,
      userId: row.user_id,
      workflowId: row.workflow_id,
      attempt: row.attempt,
    }));
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

  /**
   * An operator's adjustment of `amount` credits (negative: taken back), once per `key`, `note` its reason (see
   * `adjustStatement`). A key used before answers the entry it wrote (`replayed`), whatever this call asked: the
   * caller compares. Nothing is written when the outcome is `short` (a debit larger than the available balance),
   * `unknown` (no such account) or `overflow` (a balance past what the account's integer holds). `alongside`: a
   * write riding in the statement (from `$5`), which may select `from entry` to happen exactly when the entry is
   * written: not on a replay, nor on a refusal; and when it fails, nothing is adjusted.
   */
  async adjust(
    entry: { userId: string; key: string; amount: number; note: string },
    alongside?: RidingWrite,
  ): Promise<AdjustOutcome> {
    let row: {
      entry_id: string | null;
      created_at: Date | null;
      balance: number | null;
      available_before: number | null;
    };
    try {
      [row] = (await run<typeof row>(this.hotPath, alongside ? adjustStatementWith(alongside) : adjustStatement, [
        entry.userId,
        entry.key,
        entry.amount,
        entry.note,
        ...(alongside?.values ?? []),
      ])) as [typeof row];
    } catch (error) {
      const code = (error as { code?: string }).code;
      // A balance past PostgreSQL's integer: nothing written.
      if (code === '22003') return { outcome: 'overflow' };
      // The same key written by a concurrent call since this statement's snapshot: that call's entry stands.
      if (code !== '23505') throw error;
      row = { entry_id: null, created_at: null, balance: null, available_before: null };
    }
    if (row.entry_id !== null) {
      return {
        outcome: 'adjusted',
        entry: {
          id: row.entry_id,
          userId: entry.userId,
          amount: entry.amount,
          note: entry.note,
          createdAt: row.created_at!,
        },
        balance: row.balance!,
      };
    }
    const [existing] = await run<{
      id: string;
      user_id: string;
      amount: number;
      note: string | null;
      created_at: Date;
    }>(
      this.hotPath,
      {
        name: 'ledger-entry-by-key',
        text: 'select id::text, user_id, amount, note, created_at from credit_ledger where key = $1',
      },
      [entry.key],
    );
    if (existing) {
      return {
        outcome: 'replayed',
        entry: {
          id: existing.id,
          userId: existing.user_id,
          amount: existing.amount,
          note: existing.note ?? '',
          createdAt: existing.created_at,
        },
      };
    }
    if (row.available_before === null) return { outcome: 'unknown' };
    return { outcome: 'short', available: row.available_before };
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
