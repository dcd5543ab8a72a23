/**
 * A plain `pg` pool for the statements every completion runs (authentication, admission, credit settlement).
 * They are fixed SQL, sent as named (prepared) statements: PostgreSQL parses and plans each once per connection,
 * and no ORM unit of work is built for them. Everything else goes through MikroORM.
 */
import pg from 'pg';

export type Pool = pg.Pool;

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
  // An idle connection the server dropped: the pool replaces it; nothing is lost.
  pool.on('error', (error) => options.onError?.(error));
  return pool;
}

/** Runs a prepared statement and returns its rows. */
export async function run<Row = Record<string, unknown>>(
  pool: Pool,
  statement: Statement,
  values: unknown[],
): Promise<Row[]> {
  const result = await pool.query({ name: statement.name, text: statement.text, values });
  return result.rows as Row[];
}
