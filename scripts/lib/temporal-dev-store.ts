/**
 * The persistent dev server's SQLite store, tuned for Tessera's load (`npm start`'s `.data/temporal.db`).
 *
 * Every workflow writes its visibility row twice (start and close), and the dev server's schema indexes that row
 * 45 times: every system column and every pre-allocated custom search attribute slot (Bool01…Keyword10), used or
 * not. Under completion traffic that index upkeep was the largest single cost of the Temporal server (about 40 % of
 * its CPU, all of it on its one SQLite connection, where every other write waits behind it). The dev server never
 * migrates this schema (it is created once, with the file), and no query names an index: a query on a column
 * without one still answers correctly, by scanning.
 *
 * So the index set is reconciled at every start: the indexes the Web UI and Tessera filter and sort by stay, as do
 * the slots of every registered custom search attribute (an index is created again for a slot registered later),
 * and the rest are dropped.
 */
import { DatabaseSync } from 'node:sqlite';

/**
 * System indexes kept: the UI's default order and filters, parent/child and schedule views. Execution time and a
 * schedule's start time are not kept: nothing here sorts or filters by them, and each index is about 4 % of the bytes
 * a completion writes (a query on them still answers, by scanning).
 */
const keptSystemIndexes = new Set([
  'default_idx',
  'by_workflow_id',
  'by_workflow_type',
  'by_status',
  'by_task_queue',
  'by_parent_workflow_id',
  'by_root_workflow_id',
  'by_temporal_namespace_division',
  'by_temporal_scheduled_by_id',
]);

/** Pre-allocated custom search attribute slots with a B-tree index (Text and KeywordList slots use FTS tables). */
const slotPattern = /^(Bool|Datetime|Double|Int|Keyword)(\d\d)$/;

/** `Keyword04` → `by_keyword_04`, the schema's name for that slot's index. */
function slotIndexName(field: string): string | undefined {
  const match = slotPattern.exec(field);
  return match ? `by_${match[1]!.toLowerCase()}_${match[2]}` : undefined;
}

/** The schema's statement for a slot's index (the same shape for every slot). */
function slotIndexStatement(field: string, index: string): string {
  return (
    `create index if not exists ${index} on executions_visibility ` +
    `(namespace_id, ${field}, (COALESCE(close_time, '9999-12-31 23:59:59+00:00')) DESC, start_time DESC, run_id)`
  );
}

export interface IndexReconciliation {
  dropped: string[];
  created: string[];
  /** The store's page size, fixed when it was created (temporal-server.ts chooses it for a new one). */
  pageSize: number;
}

/**
 * Drops the visibility indexes nothing filters by and makes sure every registered custom search attribute slot
 * has its index. `registeredFields` are the slot names in use (`Keyword01`…), from the namespaces' alias maps.
 * Safe while the server runs (WAL mode; waits for its write lock).
 */
export function reconcileVisibilityIndexes(dbFile: string, registeredFields: Iterable<string>): IndexReconciliation {
  const database = new DatabaseSync(dbFile);
  try {
    database.exec('pragma busy_timeout = 10000');
    const pageSize = Number(database.prepare('pragma page_size').get()?.page_size);
    const existing = new Set(
      database
        .prepare(
          "select name from sqlite_master where type = 'index' and tbl_name = 'executions_visibility' and sql is not null",
        )
        .all()
        .map((row) => String(row.name)),
    );
    const wanted = new Map<string, string>();
    for (const field of registeredFields) {
      const index = slotIndexName(field);
      if (index) wanted.set(index, field);
    }
    const dropped = [...existing].filter((index) => !keptSystemIndexes.has(index) && !wanted.has(index));
    const created = [...wanted].filter(([index]) => !existing.has(index));
    if (dropped.length === 0 && created.length === 0) return { dropped: [], created: [], pageSize };
    database.exec('begin immediate');
    try {
      for (const index of dropped) database.exec(`drop index if exists ${index}`);
      for (const [index, field] of created) database.exec(slotIndexStatement(field, index));
      database.exec('commit');
    } catch (error) {
      database.exec('rollback');
      throw error;
    }
    return { dropped, created: created.map(([index]) => index), pageSize };
  } finally {
    database.close();
  }
}
