/**
 * Google Sheets API v4, enough for the sheets tools (`/google/v4/spreadsheets/…`):
 * - `GET {id}?fields=`: the spreadsheet (title, sheets with their grid sizes).
 * - `GET {id}/values/{range}`: the range's values as the sheet shows them (formatted strings; trailing empty rows and
 *   cells left out, no `values` for an empty range), `range` the A1 range read.
 * - `PUT {id}/values/{range}?valueInputOption=RAW|USER_ENTERED {values}`: writes from the range's top-left cell.
 * - `POST {id}/values/{range}:append?valueInputOption&insertDataOption`: writes after the last row with data.
 * USER_ENTERED parses numbers and TRUE/FALSE, and keeps `=` formulas; SUM, AVERAGE, MIN, MAX and COUNT of a range and
 * a plain cell reference are computed, other formulas show `#NAME?`. An unknown sheet is 400 "Unable to parse range".
 * A spreadsheet is a Drive file too (its title is the file's name).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import type { Account, Cell, DriveFile, Spreadsheet } from './accounts.ts';
import { applyFields, badRequest, notFound, readJson } from './http.ts';

const minRows = 1000;
const minColumns = 26;

export async function sheets(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
): Promise<void> {
  const match = /^\/spreadsheets\/([^/]+)(?:\/values\/([^/]+))?$/.exec(path);
  if (!match) return notFound(response);
  const id = decodeURIComponent(match[1]!);
  const file = account.files.find((candidate) => candidate.id === id && !candidate.trashed);
  const spreadsheet = account.spreadsheets.get(id);
  if (!file || !spreadsheet) return notFound(response);
  const parameters = url.searchParams;
  if (match[2] === undefined) {
    if (request.method !== 'GET') return notFound(response);
    return sendJson(response, 200, applyFields(describe(file, spreadsheet), parameters.get('fields')));
  }
  let rangeText = decodeURIComponent(match[2]);
  let append = false;
  if (rangeText.endsWith(':append')) {
    rangeText = rangeText.slice(0, -':append'.length);
    append = true;
  }
  const range = parseRange(spreadsheet, rangeText);
  if (!range) return badRequest(response, `Unable to parse range: ${rangeText}`);
  if (request.method === 'GET' && !append) return read(response, spreadsheet, range);
  const writing = (request.method === 'PUT' && !append) || (request.method === 'POST' && append);
  if (!writing) return notFound(response);
  const option = parameters.get('valueInputOption');
  if (option !== 'RAW' && option !== 'USER_ENTERED') {
    return badRequest(response, "'valueInputOption' is required but not specified");
  }
  const body = await readJson(request);
  const values = body?.values;
  if (!Array.isArray(values) || !values.every((row) => Array.isArray(row))) {
    return badRequest(response, 'Invalid values: a list of rows is required');
  }
  const cells = (values as unknown[][]).map((row) => row.map((value) => entered(value, option)));
  const sheet = range.sheet;
  let startRow = range.startRow;
  if (append) {
    let last = -1;
    sheet.cells.forEach((row, index) => {
      if (row.some((value) => value !== '')) last = index;
    });
    startRow = last + 1;
  }
  cells.forEach((row, rowOffset) => {
    const target = (sheet.cells[startRow + rowOffset] ??= []);
    row.forEach((value, columnOffset) => {
      const column = range.startColumn + columnOffset;
      while (target.length < column) target.push('');
      target[column] = value;
    });
  });
  for (let index = 0; index < sheet.cells.length; index++) sheet.cells[index] ??= [];
  file.modifiedTime = new Date().toISOString();
  const width = Math.max(0, ...cells.map((row) => row.length));
  const updatedRange = `${quoteSheet(sheet.title)}!${a1(startRow, range.startColumn)}:${a1(startRow + cells.length - 1, range.startColumn + Math.max(width, 1) - 1)}`;
  const updates = {
    spreadsheetId: file.id,
    updatedRange,
    updatedRows: cells.length,
    updatedColumns: width,
    updatedCells: cells.reduce((sum, row) => sum + row.length, 0),
  };
  if (append) {
    const tableEnd = Math.max(startRow, 1);
    return sendJson(response, 200, {
      spreadsheetId: file.id,
      tableRange: `${quoteSheet(sheet.title)}!A1:${a1(tableEnd - 1, Math.max(width, 1) - 1)}`,
      updates,
    });
  }
  sendJson(response, 200, updates);
}

export function describe(file: DriveFile, spreadsheet: Spreadsheet) {
  return {
    spreadsheetId: file.id,
    properties: { title: file.name, locale: 'en_US', autoRecalc: 'ON_CHANGE', timeZone: 'Etc/GMT' },
    sheets: spreadsheet.sheets.map((sheet, index) => ({
      properties: {
        sheetId: sheet.sheetId,
        title: sheet.title,
        index,
        sheetType: 'GRID',
        gridProperties: {
          rowCount: Math.max(minRows, sheet.cells.length),
          columnCount: Math.max(minColumns, ...sheet.cells.map((row) => row.length)),
        },
      },
    })),
    spreadsheetUrl: `https://docs.google.com/spreadsheets/d/${file.id}/edit`,
  };
}

interface Range {
  sheet: Spreadsheet['sheets'][number];
  startRow: number;
  startColumn: number;
  /** Inclusive; Infinity for an open range. */
  endRow: number;
  endColumn: number;
}

const columnIndex = (letters: string) =>
  [...letters.toUpperCase()].reduce((sum, letter) => sum * 26 + letter.charCodeAt(0) - 64, 0) - 1;

function columnLetters(index: number): string {
  let letters = '';
  for (let value = index + 1; value > 0; value = Math.floor((value - 1) / 26)) {
    letters = String.fromCharCode(65 + ((value - 1) % 26)) + letters;
  }
  return letters;
}

const a1 = (row: number, column: number) => `${columnLetters(column)}${row + 1}`;

const quoteSheet = (title: string) => (/^[A-Za-z0-9_]+$/.test(title) ? title : `'${title.replace(/'/g, "''")}'`);

/** An A1 range: `Sheet`, `Sheet!A1:C3`, `A1:C3` (first sheet), `Sheet!A:C`, `Sheet!2:4`, `'My sheet'!B2`. */
function parseRange(spreadsheet: Spreadsheet, text: string): Range | undefined {
  let sheetName: string | undefined;
  let cells = text;
  const quoted = /^'((?:[^']|'')+)'(?:!(.*))?$/.exec(text);
  if (quoted) {
    sheetName = quoted[1]!.replace(/''/g, "'");
    cells = quoted[2] ?? '';
  } else if (text.includes('!')) {
    const index = text.lastIndexOf('!');
    sheetName = text.slice(0, index);
    cells = text.slice(index + 1);
  } else if (spreadsheet.sheets.some((sheet) => sheet.title === text)) {
    sheetName = text;
    cells = '';
  }
  const sheet = sheetName === undefined ? spreadsheet.sheets[0] : spreadsheet.sheets.find((s) => s.title === sheetName);
  if (!sheet) return undefined;
  if (cells === '') return { sheet, startRow: 0, startColumn: 0, endRow: Infinity, endColumn: Infinity };
  const [from, to] = cells.split(':');
  const corner = (part: string | undefined) => {
    const match = /^([A-Za-z]*)(\d*)$/.exec(part ?? '');
    if (!match || (match[1] === '' && match[2] === '')) return undefined;
    return {
      column: match[1] ? columnIndex(match[1]) : undefined,
      row: match[2] ? Number(match[2]) - 1 : undefined,
    };
  };
  const start = corner(from);
  if (!start) return undefined;
  const end = to === undefined ? start : corner(to);
  if (!end) return undefined;
  return {
    sheet,
    startRow: start.row ?? 0,
    startColumn: start.column ?? 0,
    endRow: end.row ?? Infinity,
    endColumn: end.column ?? Infinity,
  };
}

function read(response: ServerResponse, spreadsheet: Spreadsheet, range: Range): void {
  const shown = formatted(range.sheet);
  const rows: string[][] = [];
  const lastRow = Math.min(range.endRow, shown.length - 1);
  for (let row = range.startRow; row <= lastRow; row++) {
    const cells = (shown[row] ?? []).slice(
      range.startColumn,
      range.endColumn === Infinity ? undefined : range.endColumn + 1,
    );
    while (cells.length && cells.at(-1) === '') cells.pop();
    rows.push(cells);
  }
  while (rows.length && rows.at(-1)!.length === 0) rows.pop();
  const gridRows = Math.max(minRows, range.sheet.cells.length);
  const gridColumns = Math.max(minColumns, ...range.sheet.cells.map((row) => row.length));
  const endRow = Math.min(range.endRow, gridRows - 1);
  const endColumn = Math.min(range.endColumn, gridColumns - 1);
  void spreadsheet;
  sendJson(response, 200, {
    range: `${quoteSheet(range.sheet.title)}!${a1(range.startRow, range.startColumn)}:${a1(endRow, endColumn)}`,
    majorDimension: 'ROWS',
    ...(rows.length ? { values: rows } : {}),
  });
}

/** A value as entered: USER_ENTERED parses numbers and booleans like typing into a cell does; RAW keeps it. */
function entered(value: unknown, option: 'RAW' | 'USER_ENTERED'): Cell {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  const text = String(value);
  if (option === 'RAW') return text;
  if (/^-?\d+(\.\d+)?$/.test(text.trim())) return Number(text);
  if (/^(true|false)$/i.test(text.trim())) return text.trim().toUpperCase() === 'TRUE';
  return text;
}

/** The sheet as it shows: numbers and booleans as Sheets prints them, the supported formulas computed. */
export function formatted(sheet: Spreadsheet['sheets'][number]): string[][] {
  const show = (value: Cell | undefined, depth = 0): string => {
    if (value === undefined || value === '') return '';
    if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
    if (typeof value === 'number') return String(value);
    if (!value.startsWith('=')) return value;
    if (depth > 8) return '#REF!';
    const numberAt = (row: number, column: number) => {
      const cell = sheet.cells[row]?.[column];
      if (typeof cell === 'number') return cell;
      if (typeof cell === 'string' && cell.startsWith('=')) {
        const computed = Number(show(cell, depth + 1));
        return Number.isNaN(computed) ? undefined : computed;
      }
      return undefined;
    };
    const reference = /^=\s*([A-Z]+)(\d+)\s*$/i.exec(value);
    if (reference) return show(sheet.cells[Number(reference[2]) - 1]?.[columnIndex(reference[1]!)], depth + 1);
    const aggregate = /^=\s*(SUM|AVERAGE|MIN|MAX|COUNT)\(\s*([A-Z]+)(\d+)\s*:\s*([A-Z]+)(\d+)\s*\)\s*$/i.exec(value);
    if (!aggregate) return '#NAME?';
    const numbers: number[] = [];
    for (let row = Number(aggregate[3]) - 1; row <= Number(aggregate[5]) - 1; row++) {
      for (let column = columnIndex(aggregate[2]!); column <= columnIndex(aggregate[4]!); column++) {
        const number = numberAt(row, column);
        if (number !== undefined) numbers.push(number);
      }
    }
    const sum = numbers.reduce((total, number) => total + number, 0);
    switch (aggregate[1]!.toUpperCase()) {
      case 'SUM':
        return String(sum);
      case 'AVERAGE':
        return numbers.length ? String(sum / numbers.length) : '#DIV/0!';
      case 'MIN':
        return String(numbers.length ? Math.min(...numbers) : 0);
      case 'MAX':
        return String(numbers.length ? Math.max(...numbers) : 0);
      default:
        return String(numbers.length);
    }
  };
  return sheet.cells.map((row) => row.map((value) => show(value)));
}

/** The first sheet as CSV (what Drive's export of a spreadsheet to text/csv answers). */
export function sheetCsv(spreadsheet: Spreadsheet): string {
  const first = spreadsheet.sheets[0];
  if (!first) return '';
  return formatted(first)
    .map((row) => row.map((value) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value)).join(','))
    .join('\n');
}

/** A sheet from CSV text (a Drive upload converted to a spreadsheet). */
export function sheetFromCsv(text: string): Cell[][] {
  const rows: Cell[][] = [];
  let row: Cell[] = [];
  let field = '';
  let quoted = false;
  const endField = () => {
    row.push(entered(field, 'USER_ENTERED'));
    field = '';
  };
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!;
    if (quoted) {
      if (character === '"' && text[index + 1] === '"') {
        field += '"';
        index += 1;
      } else if (character === '"') quoted = false;
      else field += character;
    } else if (character === '"') quoted = true;
    else if (character === ',') endField();
    else if (character === '\n' || character === '\r') {
      if (character === '\r' && text[index + 1] === '\n') index += 1;
      endField();
      rows.push(row);
      row = [];
    } else field += character;
  }
  if (field !== '' || row.length) {
    endField();
    rows.push(row);
  }
  return rows;
}
