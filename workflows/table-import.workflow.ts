/**
 * tableImport: one CSV or Excel file into a table of the user's data database (`table-import-<import id>`, search
 * attributes TesseraKind `table-import` and TesseraUser), started by `POST /sql/csv_to_db` after it recorded the import
 * (activities/user-data/import-store.ts). Two activities, each a full pass over the file
 * (activities/user-data/table-import.ts): the columns and their types, then the rows into the table in one
 * transaction. Both heartbeat, so a worker that dies mid-file is noticed within the heartbeat timeout and the pass
 * starts again on another worker (the load from its first row: the dead attempt's transaction left nothing). A refusal
 * of the file itself (no header, a workbook that does not open, a name taken without `replace`) is not retried; the
 * import is then recorded `failed` with the reason, as it is after the retries of anything else run out.
 */
import type { RetryPolicy } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { TableImportActivities, TableImportInput } from '../activities/user-data/table-import.ts';
import type { TableImportResult } from '../activities/user-data/import-store.ts';

const retry: RetryPolicy = {
  initialInterval: '2s',
  backoffCoefficient: 2,
  maximumInterval: '1m',
  maximumAttempts: 5,
  nonRetryableErrorTypes: ['TableImportRefused', 'conflict'],
};

// A 100 MB file takes a minute or two per pass on a small machine; the heartbeat notices a dead worker much sooner.
const passes = proxyActivities<TableImportActivities>({
  startToCloseTimeout: '2h',
  heartbeatTimeout: '30s',
  retry,
});

// Recording the end must happen: retried until the database answers.
const record = proxyActivities<TableImportActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

export function tableImportWorkflowId(importId: string): string {
  return `table-import-${importId}`;
}

export async function tableImport(input: TableImportInput): Promise<TableImportResult> {
  try {
    const plan = await passes.inferImportColumns(input);
    const result = await passes.loadImportedTable(input, plan);
    await record.completeTableImport(input.importId, result);
    return result;
  } catch (error) {
    const cause = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    await record.failTableImport(input.importId, message);
    const type = cause instanceof ApplicationFailure && cause.type === 'conflict' ? 'conflict' : 'invalid_request';
    throw ApplicationFailure.create({ type, message, nonRetryable: true });
  }
}
