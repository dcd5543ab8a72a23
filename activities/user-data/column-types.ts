/**
 * Column types of an imported table (table-import.ts), decided from every value of the file: the first pass counts,
 * per column, the non-empty values that read as each type; `chooseColumnType` then takes
 *
 * 1. the narrowest type every value fits: integer (a 64-bit whole number without leading zeros, so zip codes and
 *    identifiers like `007` stay text), numeric, boolean (`true`/`false`/`yes`/`no`), date (`2024-03-31` or
 *    `2024/03/31`), timestamp (a date with a time, `T` or a space between; `timestamptz` when any value carries a zone);
 * 2. failing that, the type of numeric, boolean or timestamp that at most 1% of the values miss (the fewest misses):
 *    a column of numbers with a stray `n/a` stays a number column and that row is reported as a bad row, rather than
 *    the whole column turning to text;
 * 3. otherwise text.
 *
 * Empty values are NULL in every type and never count against one. Because the whole file is read before any type
 * is chosen, a value late in the file is weighed like an early one: no good row is refused for a type a sample of the
 * first rows suggested.
 */

export type ColumnType = 'integer' | 'numeric' | 'boolean' | 'date' | 'timestamp' | 'timestamptz' | 'text';

/** The PostgreSQL type each column type is created as. */
export const postgresTypes: Record<ColumnType, string> = {
  integer: 'bigint',
  numeric: 'numeric',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamp',
  timestamptz: 'timestamptz',
  text: 'text',
};

/** Share of a column's values that may miss its type before the column falls back to a wider one. */
export const typeTolerance = 0.01;

const integerPattern = /^[+-]?(?:0|[1-9]\d*)$/;
const numericPattern = /^[+-]?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const booleanPattern = /^(?:true|false|yes|no)$/i;
const datePattern = /^(\d{4})([-/])(\d{2})\2(\d{2})$/;
const timestampPattern =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const int8Max = 9_223_372_036_854_775_807n;
const int8Min = -9_223_372_036_854_775_808n;

function validDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function isInteger(value: string): boolean {
  if (!integerPattern.test(value)) return false;
  if (value.length < 18) return true;
  const parsed = BigInt(value);
  return parsed >= int8Min && parsed <= int8Max;
}

export const isNumeric = (value: string) => numericPattern.test(value);
export const isBoolean = (value: string) => booleanPattern.test(value);

export function isDate(value: string): boolean {
  const match = datePattern.exec(value);
  return match !== null && validDate(Number(match[1]), Number(match[3]), Number(match[4]));
}

/** A timestamp (a date alone counts too: midnight); `zoned` when it carries a zone. */
export function readTimestamp(value: string): { zoned: boolean } | null {
  if (isDate(value)) return { zoned: false };
  const match = timestampPattern.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match;
  if (!validDate(Number(year), Number(month), Number(day))) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) return null;
  return { zoned: match[7] !== undefined };
}

/** What the first pass counts for one column. */
export interface ColumnStats {
  nonEmpty: number;
  integer: number;
  numeric: number;
  boolean: number;
  date: number;
  timestamp: number;
  zoned: number;
}

export const emptyStats = (): ColumnStats => ({
  nonEmpty: 0,
  integer: 0,
  numeric: 0,
  boolean: 0,
  date: 0,
  timestamp: 0,
  zoned: 0,
});

/** Counts one value (already trimmed; empty ones are NULL and not counted). */
export function countValue(stats: ColumnStats, value: string): void {
  if (value === '') return;
  stats.nonEmpty++;
  if (isNumeric(value)) {
    stats.numeric++;
    if (isInteger(value)) stats.integer++;
    return;
  }
  if (isBoolean(value)) {
    stats.boolean++;
    return;
  }
  const timestamp = readTimestamp(value);
  if (timestamp) {
    stats.timestamp++;
    if (timestamp.zoned) stats.zoned++;
    if (isDate(value)) stats.date++;
  }
}

/** The column's type from its counts (see the file comment). */
export function chooseColumnType(stats: ColumnStats): ColumnType {
  if (stats.nonEmpty === 0) return 'text';
  const timestampType = stats.zoned > 0 ? 'timestamptz' : 'timestamp';
  const exact: Array<[ColumnType, number]> = [
    ['integer', stats.integer],
    ['numeric', stats.numeric],
    ['boolean', stats.boolean],
    ['date', stats.date],
    [timestampType, stats.timestamp],
  ];
  for (const [type, fits] of exact) if (fits === stats.nonEmpty) return type;
  const allowed = Math.floor(stats.nonEmpty * typeTolerance);
  const near = exact
    .filter(([type]) => type === 'numeric' || type === 'boolean' || type === timestampType)
    .map(([type, fits]) => [type, stats.nonEmpty - fits] as const)
    .filter(([, misses]) => misses <= allowed)
    .sort((a, b) => a[1] - b[1]);
  return near[0]?.[0] ?? 'text';
}

/**
 * The value as COPY reads it for a column of `type`, or null when it does not fit (the row is then a bad row). Empty
 * is NULL. Dates written with slashes are given dashes; everything else PostgreSQL reads as written.
 */
export function valueFor(type: ColumnType, value: string): { value: string | null } | null {
  if (value === '') return { value: null };
  switch (type) {
    case 'integer':
      return isInteger(value) ? { value: value.replace(/^\+/, '') } : null;
    case 'numeric':
      return isNumeric(value) ? { value } : null;
    case 'boolean':
      return isBoolean(value) ? { value: value.toLowerCase() } : null;
    case 'date':
      return isDate(value) ? { value: value.replaceAll('/', '-') } : null;
    case 'timestamp':
    case 'timestamptz': {
      const timestamp = readTimestamp(value);
      if (!timestamp) return null;
      // A zone in a column without zones would be dropped by PostgreSQL without a word: refuse it instead.
      if (type === 'timestamp' && timestamp.zoned) return null;
      return { value: value.replaceAll('/', '-') };
    }
    case 'text':
      return { value };
  }
}
