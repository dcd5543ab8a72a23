/**
 * CSV and Excel files into tables of the user's data database (`POST /sql/csv_to_db`; workflows/table-import.workflow.ts
 * runs these activities). The file is streamed twice from the upload store and never held whole:
 *
 * 1. `inferImportColumns` reads every row once: the header names the columns (lower-cased, `[a-z0-9_]`, unique), and
 *    each column's type is decided from all its values (column-types.ts).
 * 2. `loadImportedTable` reads every row again, checks it (the header's number of fields; each value fits its
 *    column's type; no NUL) and streams the good ones to PostgreSQL's `COPY … FROM STDIN` (pg-copy-streams) into a
 *    staging table in the `tessera_import` schema, which no user role can see. Bad rows are counted and the first
 *    ten reported with their line and reason; nothing is dropped silently. Then, still in the same transaction, the
 *    staging table is moved into the user's schema under its name (an earlier table of that name is dropped when the
 *    import replaces it, else the import fails with a conflict), the user's role is granted SELECT, the import is
 *    recorded on the table (`COMMENT`) and the table analysed. One transaction: a worker killed mid-load leaves
 *    nothing behind (the server rolls back), and the retried activity starts the load again from the first row.
 *    An attempt that died after that commit but before reporting is recognised by the table's comment, and answers
 *    the result it kept.
 *
 * Readers: the upload's table readers (activities/uploads/table-rows.ts, shared with the RAG index): `csv-parse`
 * streaming, with the delimiter the header line uses most and malformed records counted as bad rows, and exceljs's
 * streaming workbook reader for xlsx (the first worksheet here).
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApplicationFailure } from '@temporalio/common';
import { from as copyFrom } from 'pg-copy-streams';
import { heartbeat, keepAlive } from '../heartbeat.ts';
import { sniffDelimiter, tableRows, UnreadableTable } from '../uploads/table-rows.ts';
import type { OpenedUpload } from '../uploads/upload-store.ts';
import {
  chooseColumnType,
  countValue,
  emptyStats,
  postgresTypes,
  valueFor,
  type ColumnStats,
  type ColumnType,
} from './column-types.ts';
import { parseComment, type TableComment, type UserDataDatabase } from './data-database.ts';
import type { BadRow, ImportStore, TableImportResult } from './import-store.ts';

export interface TableImportInput {
  importId: string;
  userId: string;
  fileId: string;
  table: string;
  replace: boolean;
}

export interface ImportColumn {
  name: string;
  /** The header as the file wrote it. */
  header: string;
  type: ColumnType;
}

export interface ImportPlan {
  columns: ImportColumn[];
  /** The CSV delimiter (absent for a workbook). */
  delimiter?: string;
}

/** Reads a user's upload (activities/uploads/upload-store.ts). */
export interface UploadReader {
  open(userId: string, fileId: string): Promise<OpenedUpload | null>;
}

export interface TableImportDependencies {
  userData: UserDataDatabase;
  imports: ImportStore;
  uploads: UploadReader;
}

/** PostgreSQL's limit of columns in a table. */
const maxColumns = 1600;
const badRowSamples = 10;
const progressEveryMs = 2_000;

/** A table name as the platform makes it: lower case, `[a-z0-9_]`, a letter first, at most 63 bytes, never `pg_…`. */
export const tableNamePattern = /^(?!pg_)[a-z][a-z0-9_]{0,62}$/;

/** A table name from a file name: `Sales Q1 (2024).csv` → `sales_q1_2024`. */
export function tableNameFromFile(fileName: string): string {
  const base = identifierOf(fileName.replace(/\.[A-Za-z0-9]{1,5}$/, ''));
  const name = /^[a-z]/.test(base) && !base.startsWith('pg_') ? base : `t_${base}`;
  return name.slice(0, 63).replace(/_+$/, '') || 'imported';
}

function identifierOf(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Column names from the header: cleaned, `column_<n>` for an empty one, `_2`, `_3` … for repeats. */
export function columnNames(header: string[]): string[] {
  const seen = new Set<string>();
  return header.map((cell, index) => {
    let base = identifierOf(cell).slice(0, 59) || `column_${index + 1}`;
    if (/^\d/.test(base)) base = `c_${base}`.slice(0, 59);
    let name = base;
    for (let suffix = 2; seen.has(name); suffix++) name = `${base}_${suffix}`;
    seen.add(name);
    return name;
  });
}

/** One row of the file: its line (row number in a workbook) and its values as text, or why it could not be read. */
type FileRow = { line: number; values: string[] } | { line: number; error: string };

/** A refusal of the file itself (no header, too many columns, unreadable): the import fails, not retried. */
function refuseFile(message: string): never {
  throw ApplicationFailure.nonRetryable(message, 'TableImportRefused');
}

async function openUpload(uploads: UploadReader, input: TableImportInput): Promise<OpenedUpload> {
  const upload = await uploads.open(input.userId, input.fileId);
  if (!upload) refuseFile(`The file ${input.fileId} no longer exists`);
  if (upload.kind !== 'csv' && upload.kind !== 'xlsx') {
    refuseFile(`The file ${input.fileId} is ${upload.kind}: only CSV and Excel (xlsx) files become tables`);
  }
  return upload;
}

/** The delimiter the first line uses most (comma when it holds none of them). */
/**
 * The file's rows (activities/uploads/table-rows.ts, the readers the RAG index uses too): the first worksheet of a
 * workbook; a workbook that cannot be read ends the import with that reason.
 */
async function* fileRows(upload: OpenedUpload, plan: { delimiter?: string }): AsyncGenerator<FileRow> {
  try {
    yield* tableRows(upload, { sheets: 'first', ...(plan.delimiter ? { delimiter: plan.delimiter } : {}) });
  } catch (error) {
    if (error instanceof UnreadableTable) refuseFile(`The file could not be read: ${error.message}`);
    throw error;
  }
}

/** Calls `report` with the rows read so far at most every two seconds (heartbeat and the import's progress). */
function progressReporter(report: (rows: number) => Promise<void>) {
  let last = Date.now();
  return async (rows: number, force = false) => {
    if (!force && Date.now() - last < progressEveryMs) return;
    last = Date.now();
    heartbeat({ rows });
    await report(rows);
  };
}

/** Why the row does not fit the plan, or its COPY line (CSV, every text value quoted so an empty one is not NULL). */
function copyLine(plan: ImportPlan, values: string[]): { line: string } | { reason: string } {
  const { columns } = plan;
  if (values.length !== columns.length) {
    return { reason: `expected ${columns.length} fields, found ${values.length}` };
  }
  const out: string[] = [];
  for (let index = 0; index < columns.length; index++) {
    const column = columns[index]!;
    const raw = values[index]!;
    if (raw.includes('\u0000')) return { reason: `column ${column.name}: contains a NUL character` };
    const trimmed = raw.trim();
    const fitted = valueFor(column.type, column.type === 'text' ? raw : trimmed);
    if (!fitted) {
      const shown = trimmed.length > 60 ? `${trimmed.slice(0, 60)}…` : trimmed;
      return { reason: `column ${column.name}: "${shown}" is not ${column.type}` };
    }
    // In a text column a value of spaces only is still a value; empty (nothing at all) is NULL everywhere.
    out.push(fitted.value === null || raw === '' ? '' : `"${fitted.value.replaceAll('"', '""')}"`);
  }
  return { line: `${out.join(',')}\n` };
}

export function createTableImportActivities(dependencies: TableImportDependencies) {
  const { userData, imports, uploads } = dependencies;

  return {
    /** The first pass: columns and their types from the whole file. */
    // Both passes heartbeat every few seconds while they run (keepAlive), besides reporting their rows: a pass whose
    // reading waits (COPY's backpressure on a busy database, the final move and ANALYZE) is alive, and Temporal must
    // not start a second attempt beside it. (Heartbeats only from the row loop once let a 250,000-row load on a
    // loaded machine time out while it ran; its retries then raced it for the table.)
    inferImportColumns: (input: TableImportInput): Promise<ImportPlan> =>
      keepAlive(async () => {
        const upload = await openUpload(uploads, input);
        const delimiter = upload.kind === 'csv' ? await sniffDelimiter(upload) : undefined;
        const report = progressReporter((rows) => imports.progress(input.importId, 'inferring', rows));
        let header: string[] | null = null;
        let stats: ColumnStats[] = [];
        let rows = 0;
        for await (const row of fileRows(upload, { delimiter })) {
          if ('error' in row) continue;
          if (!header) {
            header = row.values;
            if (header.length > maxColumns) {
              refuseFile(`The file has ${header.length} columns; a table holds at most ${maxColumns}`);
            }
            stats = header.map(() => emptyStats());
            continue;
          }
          rows++;
          await report(rows);
          // Rows of the wrong width are bad rows (the second pass says so) and say nothing about the types.
          if (row.values.length !== header.length) continue;
          row.values.forEach((value, index) => countValue(stats[index]!, value.trim()));
        }
        if (!header) refuseFile('The file has no header row: its first row must name the columns');
        const names = columnNames(header);
        await report(rows, true);
        return {
          columns: header.map((cell, index) => ({
            name: names[index]!,
            header: cell,
            type: chooseColumnType(stats[index]!),
          })),
          ...(delimiter ? { delimiter } : {}),
        };
      }),

    /** The second pass: the rows into the table, in one transaction (see the file comment). */
    loadImportedTable: (input: TableImportInput, plan: ImportPlan): Promise<TableImportResult> =>
      keepAlive(async () => {
        await userData.ensureDatabase();
        const identity = await userData.ensureUser(input.userId);
        const finished = await finishedEarlier(userData, imports, identity.schema, input);
        if (finished) return finished;
        const upload = await openUpload(uploads, input);
        const report = progressReporter((rows) => imports.progress(input.importId, 'loading', rows));
        await imports.progress(input.importId, 'loading', 0);
        const client = await userData.admin.connect();
        let broken = false;
        const onError = () => (broken = true);
        client.on('error', onError);
        try {
          const staging = client.escapeIdentifier(`import_${input.importId}`);
          const schema = client.escapeIdentifier(identity.schema);
          const table = client.escapeIdentifier(input.table);
          await client.query(`begin; set local timezone = 'UTC'`);
          await client.query(
            `create table tessera_import.${staging} (${plan.columns
              .map((column) => `${client.escapeIdentifier(column.name)} ${postgresTypes[column.type]}`)
              .join(', ')})`,
          );
          let loaded = 0;
          let bad = 0;
          let read = 0;
          const samples: BadRow[] = [];
          const markBad = (line: number, reason: string) => {
            bad++;
            if (samples.length < badRowSamples) samples.push({ line, reason });
          };
          async function* copyText(): AsyncGenerator<string> {
            let batch = '';
            let headerSeen = false;
            for await (const row of fileRows(upload, plan)) {
              if ('error' in row) {
                read++;
                markBad(row.line, row.error);
                continue;
              }
              if (!headerSeen) {
                headerSeen = true;
                continue;
              }
              read++;
              const checked = copyLine(plan, row.values);
              if ('reason' in checked) markBad(row.line, checked.reason);
              else {
                loaded++;
                batch += checked.line;
              }
              // Batches of about 64 KB: few writes, and COPY's backpressure bounds what is held.
              if (batch.length >= 64 * 1024) {
                yield batch;
                batch = '';
              }
              await report(read);
            }
            if (batch) yield batch;
          }
          const columnList = plan.columns.map((column) => client.escapeIdentifier(column.name)).join(', ');
          await pipeline(
            Readable.from(copyText()),
            client.query(copyFrom(`copy tessera_import.${staging} (${columnList}) from stdin with (format csv)`)),
          );
          const result: TableImportResult = {
            table: input.table,
            rows: loaded,
            columns: plan.columns.map((column) => ({
              name: column.name,
              type: postgresTypes[column.type],
              header: column.header,
            })),
            bad_rows: bad,
            bad_row_samples: samples,
          };
          // Serialised with other imports into this user's schema: the name check and the move are one step.
          await client.query('select pg_advisory_xact_lock(hashtext($1))', [`tessera import ${identity.schema}`]);
          const existing = await client.query<{ comment: string | null }>(
            `select obj_description(c.oid, 'pg_class') as comment from pg_class c
             join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = $2`,
            [identity.schema, input.table],
          );
          if (existing.rowCount) {
            // An earlier attempt of this import that Temporal had given up on, still running, committed meanwhile:
            // its table is the result.
            if (parseComment(existing.rows[0]!.comment)?.import_id === input.importId) {
              await client.query('rollback');
              const kept = await imports.keptResult(input.importId);
              if (kept) return kept;
              throw new Error(`import ${input.importId}: its table exists but its result was not kept`);
            }
            if (!input.replace) {
              throw ApplicationFailure.nonRetryable(
                `A table named ${input.table} already exists: choose another name or import with replace: true`,
                'conflict',
              );
            }
            await client.query(`drop table ${schema}.${table}`);
          }
          await client.query(`alter table tessera_import.${staging} set schema ${schema}`);
          await client.query(`alter table ${schema}.${staging} rename to ${table}`);
          await client.query(`grant select on ${schema}.${table} to ${client.escapeIdentifier(identity.role)}`);
          const comment: TableComment = { import_id: input.importId, file_id: input.fileId, rows: loaded };
          await client.query(`comment on table ${schema}.${table} is ${client.escapeLiteral(JSON.stringify(comment))}`);
          await client.query(`analyze ${schema}.${table}`);
          await imports.keepResult(input.importId, result);
          await client.query('commit');
          await report(read, true);
          return result;
        } catch (error) {
          await client.query('rollback').catch(() => (broken = true));
          throw error;
        } finally {
          client.off('error', onError);
          client.release(broken);
        }
      }),

    async completeTableImport(importId: string, result: TableImportResult): Promise<void> {
      await imports.complete(importId, result);
    },

    async failTableImport(importId: string, error: string): Promise<void> {
      await imports.fail(importId, error);
    },
  };
}

/** The result of an earlier attempt whose commit went through (the table carries this import's id), else null. */
async function finishedEarlier(
  userData: UserDataDatabase,
  imports: ImportStore,
  schema: string,
  input: TableImportInput,
): Promise<TableImportResult | null> {
  const found = await userData.admin.query<{ comment: string | null }>(
    `select obj_description(c.oid, 'pg_class') as comment from pg_class c
       join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = $2`,
    [schema, input.table],
  );
  if (parseComment(found.rows[0]?.comment ?? null)?.import_id !== input.importId) return null;
  return imports.keptResult(input.importId);
}

export type TableImportActivities = ReturnType<typeof createTableImportActivities>;
