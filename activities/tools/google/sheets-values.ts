/** What the sheets tools share: a range in A1 notation, the cells the model writes, and Sheets' answers. */
import { z } from 'zod';

export const spreadsheetIdInput = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]{10,200}$/, 'a spreadsheet id (the long id in its URL, or from drive_search)')
  .describe('The spreadsheet id (from drive_search, or the long id in its URL)');

export const a1Range = (what: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(300)
    .describe(`${what} in A1 notation: a sheet name ("Budget"), a range ("Budget!A1:C20") or cells ("B2:C3")`);

export const cell = z.union([z.string().max(50_000), z.number(), z.boolean(), z.null()]);

export const rowsInput = (what: string) =>
  z
    .array(z.array(cell).max(200))
    .min(1)
    .max(1_000)
    .describe(`${what}: rows of cells; text starting with = is a formula, numbers and dates are parsed as Sheets does`);

/** The path of a range's values: the range is one path segment, `!` and `:` included. */
export const valuesPath = (spreadsheetId: string, range: string) =>
  `/spreadsheets/${encodeURIComponent(spreadsheetId)}/values/${encodeURIComponent(range)}`;
