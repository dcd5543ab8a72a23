/**
 * `sheets_append`: adds rows after the last row of a table in a Google Sheet (`spreadsheets.values.append`,
 * `INSERT_ROWS`, values entered as a user would type them). The user approves it first; it runs once per tool call
 * (Sheets has no idempotency key: see activities/google/workspace-writes.ts for the one narrow window).
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { a1Range, rowsInput, spreadsheetIdInput, valuesPath } from './sheets-values.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const sheetsAppendTool = defineTool({
  name: 'sheets_append',
  description:
    'Append rows to a table in a Google Sheet: after the last row with data in the range (e.g. "Budget" or ' +
    '"Budget!A:C"). Values are entered as typed by a user (formulas, numbers, dates). The user is asked to approve it.',
  input: z
    .object({
      spreadsheet_id: spreadsheetIdInput,
      range: a1Range('The table to append to'),
      rows: rowsInput('The rows to add'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ spreadsheet_id, range, rows }, context) {
    const { google, userId, write } = writeOf(context, 'sheets_append');
    return google.once(write, async () => {
      const answer = (
        await google.request(
          userId,
          {
            family: 'sheets',
            method: 'POST',
            path: `${valuesPath(spreadsheet_id, range)}:append`,
            query: { valueInputOption: 'USER_ENTERED', insertDataOption: 'INSERT_ROWS' },
            json: { range, majorDimension: 'ROWS', values: rows },
          },
          context.signal,
        )
      ).json as { updates?: { updatedRange?: string; updatedRows?: number; updatedCells?: number } };
      return {
        appended: true,
        range: answer.updates?.updatedRange,
        rows: answer.updates?.updatedRows ?? rows.length,
        cells: answer.updates?.updatedCells,
      };
    });
  },
});
