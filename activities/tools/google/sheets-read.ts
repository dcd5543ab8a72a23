/**
 * `sheets_read`: the values of a range of a Google Sheet (`spreadsheets.values.get`, formatted as the sheet shows
 * them), with the spreadsheet's title and sheet names (`spreadsheets.get`); without a range, the first sheet. A
 * read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { a1Range, spreadsheetIdInput, valuesPath } from './sheets-values.ts';
import { workspaceOf, workspaceTool } from './workspace-tool.ts';

const maxCells = 5_000;

export const sheetsReadTool = defineTool({
  name: 'sheets_read',
  description:
    'Read the values of a Google Sheet: a range in A1 notation ("Budget!A1:D50"), a whole sheet ("Budget"), or ' +
    'without a range the first sheet. Answers the rows as the sheet shows them, the spreadsheet’s title and its ' +
    'sheet names.',
  input: z
    .object({
      spreadsheet_id: spreadsheetIdInput,
      range: a1Range('What to read').optional(),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 20_000,
  async run({ spreadsheet_id, range }, context) {
    const { google, userId } = workspaceOf(context);
    const spreadsheet = (
      await google.request(
        userId,
        {
          family: 'sheets',
          path: `/spreadsheets/${encodeURIComponent(spreadsheet_id)}`,
          query: { fields: 'spreadsheetId,properties.title,sheets.properties(title,gridProperties)' },
        },
        context.signal,
      )
    ).json as {
      properties?: { title?: string };
      sheets?: Array<{ properties?: { title?: string; gridProperties?: { rowCount?: number; columnCount?: number } } }>;
    };
    const sheets = (spreadsheet.sheets ?? []).map((sheet) => sheet.properties?.title ?? '');
    const target = range ?? sheets[0] ?? 'Sheet1';
    const values = (
      await google.request(userId, { family: 'sheets', path: valuesPath(spreadsheet_id, target) }, context.signal)
    ).json as { range?: string; values?: unknown[][] };
    const rows: unknown[][] = [];
    let cells = 0;
    for (const row of values.values ?? []) {
      if (cells + row.length > maxCells) break;
      rows.push(row);
      cells += row.length;
    }
    const total = values.values?.length ?? 0;
    return {
      spreadsheet: spreadsheet.properties?.title,
      sheets,
      range: values.range ?? target,
      rows,
      ...(rows.length < total
        ? { note: `${rows.length} of ${total} rows: read the rest with a narrower range starting after them` }
        : {}),
      ...(total === 0 ? { note: 'the range is empty' } : {}),
    };
  },
});
