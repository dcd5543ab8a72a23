/**
 * Counts the write transactions a test's platform makes in its own database (each test file has one: databases.ts).
 *
 * Every table of the database gets a row-level trigger that records the transaction id of each insert, update and
 * delete (`pg_current_xact_id()`, assigned already since the row changed) and the table it touched, in an unlogged
 * table of its own. A transaction that changed rows is counted once however many rows and tables it touched; one that
 * only read is not counted. Only this database's rows are seen, so other work on the server (other tests, the bench)
 * cannot change the count, and nothing is timed: the test waits for the work it measures to end, then reads the log.
 * PostgreSQL's own counters (`pg_stat_database.xact_commit`, the next transaction id) are server- or database-wide and
 * count reads too, so they would not do here.
 */
import pg from 'pg';

export interface WriteTransaction {
  xid: string;
  /** The tables it changed, in name order. */
  tables: string[];
}

export interface WriteCounter {
  /** Forgets what was recorded so far. */
  reset(): Promise<void>;
  /** The transactions recorded since the last reset, in the order they took their ids. */
  transactions(): Promise<WriteTransaction[]>;
  close(): Promise<void>;
}

const logTable = 'test_write_log';

/** Installs the triggers (idempotent) on every table of `databaseUrl`'s public schema. */
export async function countWriteTransactions(databaseUrl: string): Promise<WriteCounter> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  await pool.query(`create unlogged table if not exists ${logTable} (xid xid8 not null, tbl text not null,
                      primary key (xid, tbl))`);
  await pool.query(`create or replace function test_log_write() returns trigger language plpgsql as $$
    begin
      insert into ${logTable} (xid, tbl) values (pg_current_xact_id(), tg_table_name) on conflict do nothing;
      return null;
    end $$`);
  const { rows } = await pool.query<{ name: string }>(
    `select tablename as name from pg_tables where schemaname = 'public' and tablename <> $1`,
    [logTable],
  );
  for (const { name } of rows) {
    await pool.query(`create or replace trigger test_log_write after insert or update or delete on "${name}"
                      for each row execute function test_log_write()`);
  }
  return {
    async reset() {
      await pool.query(`truncate ${logTable}`);
    },
    async transactions() {
      const { rows: logged } = await pool.query<{ xid: string; tables: string[] }>(
        `select xid::text as xid, array_agg(tbl order by tbl) as tables from ${logTable}
         group by xid order by xid::text::numeric`,
      );
      return logged;
    },
    async close() {
      await pool.end();
    },
  };
}
