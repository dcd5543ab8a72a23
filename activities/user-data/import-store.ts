/**
 * The platform's record of table imports (`table_imports`, db/entities/table-import.entity.ts): one row per
 * `POST /sql/csv_to_db`, written by the API when it starts the import's workflow and moved along by the workflow's
 * activities (table-import.ts): `inferring` (first pass: types), `loading` (second pass: rows into the table),
 * then `completed` with the result, or `failed` with the reason. `GET /sql/imports/{id}` reads it, for its owner only.
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from '../../db/pool.ts';

export type ImportStatus = 'inferring' | 'loading' | 'completed' | 'failed';

/** A row the second pass could not load: its line in the file (the row number in a workbook) and why. */
export interface BadRow {
  line: number;
  reason: string;
}

export interface TableImportResult {
  table: string;
  /** Rows loaded into the table. */
  rows: number;
  columns: Array<{ name: string; type: string; header: string }>;
  /** Rows that were not loaded (wrong number of fields, a value that does not fit its column's type). */
  bad_rows: number;
  /** The first few of them. */
  bad_row_samples: BadRow[];
}

/** An import as the API shows it. */
export interface TableImport {
  id: string;
  file_id: string;
  file_name: string;
  table: string;
  replace: boolean;
  status: ImportStatus;
  /** Rows read so far by the pass under way. */
  rows_read: number;
  result: TableImportResult | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

interface ImportRow {
  id: string;
  file_id: string;
  file_name: string;
  table_name: string;
  replace: boolean;
  status: ImportStatus;
  rows_read: string | number;
  result: TableImportResult | null;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const columns = `id, file_id, file_name, table_name, replace, status, rows_read, result, error, created_at, finished_at`;

function present(row: ImportRow): TableImport {
  return {
    id: row.id,
    file_id: row.file_id,
    file_name: row.file_name,
    table: row.table_name,
    replace: row.replace,
    status: row.status,
    rows_read: Number(row.rows_read),
    result: row.result,
    error: row.error,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

export const newImportId = () => `imp_${randomBytes(12).toString('hex')}`;

export class ImportStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async create(entry: {
    id: string;
    userId: string;
    fileId: string;
    fileName: string;
    table: string;
    replace: boolean;
  }): Promise<TableImport> {
    const result = await this.pool.query<ImportRow>(
      `insert into table_imports (id, user_id, file_id, file_name, table_name, replace, status, rows_read, created_at)
       values ($1, $2, $3, $4, $5, $6, 'inferring', 0, now())
       returning ${columns}`,
      [entry.id, entry.userId, entry.fileId, entry.fileName, entry.table, entry.replace],
    );
    return present(result.rows[0]!);
  }

  /** The user's import, or null for a missing one or another user's. */
  async get(userId: string, id: string): Promise<TableImport | null> {
    const result = await this.pool.query<ImportRow>(
      `select ${columns} from table_imports where id = $1 and user_id = $2`,
      [id, userId],
    );
    return result.rows[0] ? present(result.rows[0]) : null;
  }

  /** Moves a running import to `status` with its progress; an ended one is left alone (a late retry). */
  async progress(id: string, status: 'inferring' | 'loading', rowsRead: number): Promise<void> {
    await this.pool.query(
      `update table_imports set status = $2, rows_read = $3 where id = $1 and status in ('inferring', 'loading')`,
      [id, status, rowsRead],
    );
  }

  /**
   * Keeps the result before the table is committed in the data database, so a retry that finds the table already
   * there (its attempt died between that commit and `complete`) can answer it.
   */
  async keepResult(id: string, result: TableImportResult): Promise<void> {
    await this.pool.query(`update table_imports set result = $2 where id = $1`, [id, JSON.stringify(result)]);
  }

  async keptResult(id: string): Promise<TableImportResult | null> {
    const found = await this.pool.query<{ result: TableImportResult | null }>(
      `select result from table_imports where id = $1`,
      [id],
    );
    return found.rows[0]?.result ?? null;
  }

  async complete(id: string, result: TableImportResult): Promise<void> {
    await this.pool.query(
      `update table_imports set status = 'completed', result = $2, rows_read = $3, error = null,
              finished_at = coalesce(finished_at, now())
        where id = $1 and status <> 'failed'`,
      [id, JSON.stringify(result), result.rows + result.bad_rows],
    );
  }

  async fail(id: string, error: string): Promise<void> {
    await this.pool.query(
      `update table_imports set status = 'failed', error = $2, finished_at = coalesce(finished_at, now())
        where id = $1 and status <> 'completed'`,
      [id, error],
    );
  }
}
