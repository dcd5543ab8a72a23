import { defineEntity, p } from '@mikro-orm/core';

/**
 * One CSV or Excel file imported into a table of its owner's data database (`POST /sql/csv_to_db`, agent service spec
 * §4.9): the workflow `table-import-<id>` moves it from `inferring` through `loading` to `completed` (with the
 * result: rows, columns and their types, bad rows and the first of them) or `failed` (with the reason). The table
 * itself lives in the data database (activities/user-data/), not here. Written and read by
 * activities/user-data/import-store.ts (plain SQL).
 */
export const TableImport = defineEntity({
  name: 'TableImport',
  tableName: 'table_imports',
  properties: {
    /** `imp_` + 24 hex characters. */
    id: p.string().primary(),
    userId: p.string(),
    fileId: p.string(),
    fileName: p.string(),
    tableName: p.string(),
    replace: p.boolean(),
    /** `inferring`, `loading`, `completed` or `failed`. */
    status: p.string(),
    /** Rows read so far by the pass under way. */
    rowsRead: p.bigint('number'),
    result: p.json().nullable(),
    error: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    finishedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});
