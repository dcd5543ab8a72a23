/**
 * `sheets_update`: writes values into cells of a Google Sheet (`spreadsheets.values.update`, values entered as a
 * user would type them). The user approves it first; it runs once per tool call.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { a1Range, rowsInput, spreadsheetIdInput, valuesPath } from './sheets-values.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const sheetsUpdateTool = defineTool({
  name: 'sheets_update',
  description:
    'Write values into cells of a Google Sheet, starting at the range’s top-left cell (e.g. "Budget!B2:C3" or ' +
    '"Budget!D10"), row by row, replacing what is there. Values are entered as typed by a user (formulas, numbers, ' +
    'dates). The user is asked to approve it.',
  input: z
    .object({
      spreadsheet_id: spreadsheetIdInput,
      range: a1Range('The cells to write'),
      values: rowsInput('The values'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ spreadsheet_id, range, values }, context) {
    const { google, userId, write } = writeOf(context, 'sheets_update');
    return google.once(write, async () => {
      const answer = (
        await google.request(
          userId,
          {
            family: 'sheets',
            method: 'PUT',
            path: valuesPath(spreadsheet_id, range),
            query: { valueInputOption: 'USER_ENTERED' },
            json: { range, majorDimension: 'ROWS', values },
          },
          context.signal,
        )
      ).json as { updatedRange?: string; updatedRows?: number; updatedCells?: number };
      return { updated: true, range: answer.updatedRange, cells: answer.updatedCells };
    });
  },
});
