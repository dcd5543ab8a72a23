/**
 * A plain `pg` pool for the statements every completion runs (authentication, admission, credit settlement).
 * They are fixed SQL, sent as named (prepared) statements: PostgreSQL parses and plans each once per connection,
 * and no ORM unit of work is built for them. Everything else goes through MikroORM.
 */
import pg from 'pg';

export type Pool = pg.Pool;

/** Where a statement runs: the pool (a transaction of its own), or a client inside a transaction (`transaction`). */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface Statement {
  /** Unique per SQL text: the connection prepares it under this name once. */
  name: string;
  text: string;
}

export function openPool(databaseUrl: string, options: { max?: number; onError?: (error: Error) => void } = {}): Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 60_000,
  });
  return guardPool(pool, options.onError);
}

/**
 * Keeps a connection the server drops (PostgreSQL shut down, restarted or killed) from taking the process down: `pg`
 * reports the drop as an `'error'` event, and one without a listener is an uncaught exception. pg-pool listens on
 * idle connections only (re-emitted on the pool) and leaves a checked-out one's to whoever holds it: a transaction
 * awaiting something else when the server went away crashed its API process (the fault bench's PostgreSQL kill).
 * Every connection gets a listener of its own here; the statement in flight still fails on its own, and a broken
 * connection is discarded when it is released (`transaction` releases it with its error).
 */
export function guardPool<T extends pg.Pool>(pool: T, onError: (error: Error) => void = () => undefined): T {
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}

/**
 * A write that rides in another statement: a named data-modifying CTE, numbered from its first parameter, that may
 * select from the statement's own CTEs (so it happens exactly when they do, and fails the statement when it fails).
 * The credit ledger's reservation, settlement and adjustment take one, as does a key's revocation.
 */
export interface RidingWrite {
  /** Names the statement variant (prepared once per connection and name). */
  name: string;
  cte(first: number): string;
  values: unknown[];
}

/** A statement's variants with a write riding in it, each built once per write's name (`build`). */
export function statementVariants(build: (write: RidingWrite) => Statement): (write: RidingWrite) => Statement {
  const built = new Map<string, Statement>();
  return (write) => {
    let statement = built.get(write.name);
    if (!statement) {
      statement = build(write);
      built.set(write.name, statement);
    }
    return statement;
  };
}

/** Runs a prepared statement (on the pool, or on a transaction's client) and returns its rows. */
export async function run<Row = Record<string, unknown>>(
  executor: Queryable,
  statement: Statement,
  values: unknown[],
): Promise<Row[]> {
  const result = await (executor as pg.Pool).query({ name: statement.name, text: statement.text, values });
  return result.rows as Row[];
}

/**
 * Runs `work` in one transaction on one pooled connection: committed when it returns, rolled back when it throws (the
 * error is rethrown). Writes that belong together (a turn's opening, its close) commit once: one WAL flush, one wait
 * for the disk, instead of one per statement.
 */
export async function transaction<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is dropped rather than handed to the next caller.
    await client.query('rollback').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * `transaction`, run again when PostgreSQL broke a deadlock by aborting it (40P01): the transaction was rolled back
 * whole, so running `work` again is safe wherever `work` only talks to the database (PostgreSQL's own advice for
 * deadlocks and serialization failures). At most `attempts` runs; the last failure is rethrown.
 */
export async function retryingDeadlocks<T>(
  pool: Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  attempts = 3,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(pool, work);
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt >= attempts) throw error;
    }
  }
}
