/**
 * The rows of an uploaded table (a CSV file or an xlsx workbook), streamed: what the table import
 * (activities/user-data/table-import.ts) loads and the RAG index (activities/rag/extract.ts) chunks, read one way.
 *
 * - CSV: `csv-parse`, streaming. The delimiter (comma, semicolon, tab or pipe) is the one the header line uses most; a
 *   byte-order mark is dropped; a malformed record (an unclosed quote) is skipped by the parser and reported as a bad
 *   row with its line, never silently.
 * - xlsx: exceljs's streaming `WorkbookReader` (SheetJS's npm package is no longer maintained there; exceljs is):
 *   numbers, dates, booleans, formulas' results and rich text read as their text. `sheets: 'first'` (the table
 *   import) reads the first worksheet, `'all'` (the index) every one, each row naming its sheet.
 *
 * A row is `{line, values}` (its line, or its row number in the sheet) or `{line, error}` for a record that could not
 * be read. Empty lines and empty sheet rows are left out.
 */
import { parse as parseCsv, type Info } from 'csv-parse';
import { headerDelimiter, type OpenedUpload } from './upload-store.ts';

export type TableRow =
  { line: number; values: string[]; sheet?: string } | { line: number; error: string; sheet?: string };

/** A workbook or CSV that cannot be read at all. */
export class UnreadableTable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableTable';
  }
}

export function tableRows(
  upload: OpenedUpload,
  options: { sheets?: 'first' | 'all'; delimiter?: string } = {},
): AsyncGenerator<TableRow> {
  if (upload.kind === 'xlsx') return workbookRows(upload, options.sheets ?? 'all');
  if (upload.kind === 'csv') return csvRows(upload, options.delimiter);
  throw new UnreadableTable(`a ${upload.kind} file has no rows`);
}

/** The delimiter the CSV's header line uses most (comma when it uses none). */
export async function sniffDelimiter(upload: OpenedUpload): Promise<string> {
  const stream = await upload.stream();
  let head = '';
  try {
    for await (const chunk of stream) {
      head += (chunk as Buffer).toString('utf8');
      if (head.includes('\n') || head.length > 64 * 1024) break;
    }
  } finally {
    stream.destroy();
  }
  return headerDelimiter(head.replace(/^\ufeff/, '').split(/\r?\n/)[0] ?? '');
}

async function* csvRows(upload: OpenedUpload, given?: string): AsyncGenerator<TableRow> {
  const delimiter = given ?? (await sniffDelimiter(upload));
  const skipped: TableRow[] = [];
  const parser = parseCsv({
    delimiter,
    bom: true,
    info: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_skip: (error) => {
      const lines = (error as { lines?: number } | undefined)?.lines ?? 0;
      skipped.push({ line: lines, error: error?.message ?? 'unreadable record' });
    },
  });
  const source = await upload.stream();
  source.on('error', (error) => parser.destroy(error));
  source.pipe(parser);
  for await (const entry of parser as AsyncIterable<{ record: string[]; info: Info }>) {
    while (skipped.length) yield skipped.shift()!;
    yield { line: entry.info.lines, values: entry.record };
  }
  while (skipped.length) yield skipped.shift()!;
}

/** An Excel cell's value as text; dates as PostgreSQL reads them (`2024-03-01`, `2024-03-01 12:30:00`). */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return '';
    const iso = value.toISOString();
    return iso.endsWith('T00:00:00.000Z') ? iso.slice(0, 10) : iso.slice(0, 19).replace('T', ' ');
  }
  if (typeof value === 'object') {
    const cell = value as {
      richText?: Array<{ text: string }>;
      text?: unknown;
      result?: unknown;
      error?: string;
      formula?: string;
      sharedFormula?: string;
    };
    if (cell.richText) return cell.richText.map((part) => part.text).join('');
    if (cell.formula !== undefined || cell.sharedFormula !== undefined) return cellText(cell.result);
    if (cell.error !== undefined) return cell.error;
    if (cell.text !== undefined) return cellText(cell.text);
  }
  return String(value);
}

async function* workbookRows(upload: OpenedUpload, sheets: 'first' | 'all'): AsyncGenerator<TableRow> {
  // Imported at the first workbook, not at the process's start (about 35 MiB; issue 29).
  const { default: ExcelJS } = await import('exceljs');
  const source = await upload.stream();
  try {
    const workbook = new ExcelJS.stream.xlsx.WorkbookReader(source, {
      worksheets: 'emit',
      sharedStrings: 'cache',
      styles: 'cache',
      hyperlinks: 'ignore',
      entries: 'ignore',
    });
    for await (const worksheet of workbook) {
      const sheet = (worksheet as { name?: string }).name;
      for await (const row of worksheet) {
        // row.values is 1-based and sparse; trailing empty cells are not there at all.
        const cells = (row.values as unknown[]).slice(1);
        const values = Array.from(cells, (cell) => cellText(cell));
        while (values.length && values.at(-1) === '') values.pop();
        if (values.length) yield { line: row.number, values, ...(sheet !== undefined ? { sheet } : {}) };
      }
      if (sheets === 'first') break;
    }
  } catch (error) {
    if (error instanceof UnreadableTable) throw error;
    throw new UnreadableTable(`the workbook cannot be read: ${(error as Error).message}`);
  } finally {
    source.destroy();
  }
}
