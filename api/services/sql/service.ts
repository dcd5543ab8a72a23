/**
 * Read-only SQL and table imports for the agent service's `/sql/*` routes (docs/files-and-rag.md):
 * queries on the caller's own tables (activities/user-data/data-database.ts, checked first by sql-guard.ts), the list
 * of those tables, and imports of the caller's CSV and Excel uploads into new tables, each a durable workflow
 * (workflows/table-import.workflow.ts) recorded in `table_imports`.
 *
 * `POST /sql/csv_to_db` waits for the import up to SQL_IMPORT_WAIT: a file that loads within it is answered 201 with
 * the result (a small file is one request, as a client expects), a larger one 202 with the running import to follow
 * at `GET /sql/imports/{id}`; a file that fails within the wait is answered with the failure. Everything of another
 * user (a file, an import) is answered as one that does not exist.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { kindKey, userKey } from '../../../common/search-attributes.ts';
import { ApiError } from '../../errors.ts';
import { SqlRefused } from '../../../activities/user-data/sql-guard.ts';
import {
  SqlQueryFailed,
  type SqlAnswer,
  type UserDataDatabase,
  type UserTable,
} from '../../../activities/user-data/data-database.ts';
import { newImportId, type ImportStore, type TableImport } from '../../../activities/user-data/import-store.ts';
import { tableNameFromFile, tableNamePattern } from '../../../activities/user-data/table-import.ts';
import type { UploadRecord } from '../../../activities/uploads/upload-store.ts';
import { tableImportWorkflowId, type tableImport } from '../../../workflows/table-import.workflow.ts';

export interface SqlServiceDependencies {
  userData: UserDataDatabase;
  imports: ImportStore;
  uploads: { get(userId: string, fileId: string): Promise<UploadRecord | null> };
  client: Client;
  taskQueue: string;
  /** SQL_IMPORT_WAIT, in milliseconds. */
  importWaitMs: number;
}

/** A refusal by either line as the API's 400, naming what was refused. */
export function sqlError(error: unknown): ApiError | null {
  if (error instanceof SqlRefused) return new ApiError('invalid_request', error.message, { param: 'sql' });
  if (error instanceof SqlQueryFailed) return new ApiError('invalid_request', error.message, { param: 'sql' });
  return null;
}

export class SqlService {
  private readonly dependencies: SqlServiceDependencies;

  constructor(dependencies: SqlServiceDependencies) {
    this.dependencies = dependencies;
  }

  async query(userId: string, sql: string, params: unknown[], maxRows?: number): Promise<SqlAnswer> {
    try {
      return await this.dependencies.userData.query(userId, sql, params, maxRows ? { maxRows } : {});
    } catch (error) {
      throw sqlError(error) ?? error;
    }
  }

  tables(userId: string): Promise<UserTable[]> {
    return this.dependencies.userData.tables(userId);
  }

  async getImport(userId: string, id: string): Promise<TableImport> {
    const found = await this.dependencies.imports.get(userId, id);
    if (!found) throw new ApiError('not_found', `No import '${id}'`);
    return found;
  }

  /** Starts the import and waits for it up to SQL_IMPORT_WAIT; `done` tells whether it ended within that. */
  async startImport(
    userId: string,
    request: { file_id: string; table?: string | undefined; replace: boolean },
  ): Promise<{ done: boolean; import: TableImport }> {
    const { uploads, userData, imports, client, taskQueue } = this.dependencies;
    const file = await uploads.get(userId, request.file_id);
    if (!file) throw new ApiError('not_found', `No file '${request.file_id}'`, { param: 'file_id' });
    if (file.kind !== 'csv' && file.kind !== 'xlsx') {
      throw new ApiError(
        'invalid_request',
        `The file '${file.id}' is ${file.kind}: only CSV and Excel (xlsx) files can be imported into a table`,
        { param: 'file_id' },
      );
    }
    const table = request.table ?? tableNameFromFile(file.fileName);
    if (!tableNamePattern.test(table)) {
      throw new ApiError(
        'invalid_request',
        'table: use lower-case letters, digits and _, starting with a letter, at most 63 characters, not pg_…',
        { param: 'table' },
      );
    }
    if (!request.replace && (await userData.tables(userId)).some((existing) => existing.name === table)) {
      throw new ApiError(
        'conflict',
        `A table named ${table} already exists: choose another name (table) or replace it (replace: true)`,
        { param: 'table' },
      );
    }
    const id = newImportId();
    await imports.create({ id, userId, fileId: file.id, fileName: file.fileName, table, replace: request.replace });
    const handle = await client.workflow.start<typeof tableImport>('tableImport', {
      workflowId: tableImportWorkflowId(id),
      taskQueue,
      args: [{ importId: id, userId, fileId: file.id, table, replace: request.replace }],
      typedSearchAttributes: [
        { key: kindKey, value: 'table-import' },
        { key: userKey, value: userId },
      ],
      staticSummary: `Table import of ${file.fileName} into ${table} for ${userId}`,
    });
    const waited = new AbortController();
    const ended = await Promise.race([
      handle.result().then(
        () => true,
        (error: unknown) => {
          throw importFailure(error);
        },
      ),
      sleep(this.dependencies.importWaitMs, false, { signal: waited.signal }).catch(() => false),
    ]).finally(() => waited.abort());
    return { done: ended, import: await this.getImport(userId, id) };
  }
}

/** The workflow's failure as the API's error: a taken name is a 409, a file that cannot become a table a 400. */
function importFailure(error: unknown): ApiError {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure && (cause.type === 'conflict' || cause.type === 'invalid_request')) {
      return new ApiError(cause.type, `The import failed: ${cause.message}`);
    }
    cause = cause.cause;
  }
  return new ApiError('internal_error', `The import failed: ${error instanceof Error ? error.message : String(error)}`);
}
