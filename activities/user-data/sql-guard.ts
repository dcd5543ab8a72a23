/**
 * The first line of the read-only SQL endpoint (docs/files-and-rag.md): PostgreSQL's own parser (`libpg-query`, the
 * server's grammar compiled to WebAssembly: no native build, and it reads exactly what the server would read, comments,
 * dollar quotes and all) turns the text into a syntax tree, and only a read passes:
 *
 * - exactly one statement: a SELECT (UNION, VALUES and `TABLE t` are SELECTs too), a WITH whose every part is a
 *   SELECT, or an EXPLAIN of those. EXPLAIN ANALYZE is allowed: it runs the query, which is still one read, under the
 *   same read-only transaction and timeout;
 * - no `SELECT … INTO` and no locking clause (`FOR UPDATE`/`FOR SHARE`, which take row locks);
 * - every function called is on `allowedFunctions` (side-effect free: aggregates, window functions, arithmetic,
 *   text, dates, JSON, arrays): `pg_sleep`, `pg_read_file`, `set_config`, `dblink`, `lo_*`, `nextval`, `query_to_xml`
 *   and anything else unknown are refused;
 * - tables are named without a schema (the caller's own schema is the only one on the search path) and never
 *   `pg_*` (the system catalogs, which PostgreSQL puts first on every search path), and no value is cast to a `reg*`
 *   type (`'other.t'::regclass` would tell whether another user's table exists).
 *
 * A refusal names what was refused (`insert`, `create table`, `several statements`, `function pg_sleep`, `schema
 * pg_catalog`). The second line is the database itself (data-database.ts): the query runs logged in as a role that can
 * read only the caller's tables, in a read-only transaction that is always rolled back, with a statement timeout.
 */
import type { parseSync } from 'libpg-query';
import { loadOnce } from '../../process/load-once.ts';

/** Why a statement was refused: `kind` names it (`insert`, `several statements`, `function pg_sleep`). */
export class SqlRefused extends Error {
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.kind = kind;
  }
}

/**
 * PostgreSQL's parser, imported at a process's first check (a few milliseconds), not at its start: the package
 * instantiates its WebAssembly module as soon as it is imported, and that module's memory (128 MiB) would otherwise
 * sit in every process whether or not it ever sees a query (issue 29).
 */
const sqlParser = loadOnce(async (): Promise<typeof parseSync> => {
  const parser = await import('libpg-query');
  await parser.loadModule();
  return parser.parseSync;
});

/**
 * Functions without side effects a query may call (lower-case; PostgreSQL folds unquoted names). Anything else is
 * refused: the list is what a question about one's own tables needs, not what PostgreSQL has.
 */
export const allowedFunctions: ReadonlySet<string> = new Set([
  // aggregates
  'count',
  'sum',
  'avg',
  'min',
  'max',
  'stddev',
  'stddev_pop',
  'stddev_samp',
  'variance',
  'var_pop',
  'var_samp',
  'array_agg',
  'string_agg',
  'bool_and',
  'bool_or',
  'every',
  'bit_and',
  'bit_or',
  'json_agg',
  'jsonb_agg',
  'json_object_agg',
  'jsonb_object_agg',
  'percentile_cont',
  'percentile_disc',
  'mode',
  'corr',
  'covar_pop',
  'covar_samp',
  'regr_avgx',
  'regr_avgy',
  'regr_count',
  'regr_intercept',
  'regr_r2',
  'regr_slope',
  'regr_sxx',
  'regr_sxy',
  'regr_syy',
  'any_value',
  // window functions
  'row_number',
  'rank',
  'dense_rank',
  'percent_rank',
  'cume_dist',
  'ntile',
  'lag',
  'lead',
  'first_value',
  'last_value',
  'nth_value',
  // arithmetic
  'abs',
  'ceil',
  'ceiling',
  'floor',
  'round',
  'trunc',
  'sign',
  'sqrt',
  'cbrt',
  'power',
  'pow',
  'exp',
  'ln',
  'log',
  'log10',
  'mod',
  'div',
  'pi',
  'degrees',
  'radians',
  'sin',
  'cos',
  'tan',
  'asin',
  'acos',
  'atan',
  'atan2',
  'gcd',
  'lcm',
  'factorial',
  'width_bucket',
  'scale',
  'min_scale',
  'trim_scale',
  'random',
  // text
  'length',
  'char_length',
  'character_length',
  'octet_length',
  'bit_length',
  'lower',
  'upper',
  'initcap',
  'btrim',
  'ltrim',
  'rtrim',
  'trim',
  'substring',
  'substr',
  'left',
  'right',
  'replace',
  'concat',
  'concat_ws',
  'position',
  'strpos',
  'split_part',
  'lpad',
  'rpad',
  'repeat',
  'reverse',
  'format',
  'translate',
  'overlay',
  'ascii',
  'chr',
  'md5',
  'starts_with',
  'regexp_replace',
  'regexp_match',
  'regexp_matches',
  'regexp_split_to_array',
  'regexp_split_to_table',
  'regexp_count',
  'regexp_like',
  'regexp_instr',
  'regexp_substr',
  'quote_ident',
  'quote_literal',
  'quote_nullable',
  'string_to_array',
  'array_to_string',
  'to_hex',
  'normalize',
  // formatting and dates
  'to_char',
  'to_number',
  'to_date',
  'to_timestamp',
  'date_trunc',
  'date_part',
  'extract',
  'date_bin',
  'age',
  'make_date',
  'make_time',
  'make_timestamp',
  'make_timestamptz',
  'make_interval',
  'justify_days',
  'justify_hours',
  'justify_interval',
  'isfinite',
  'now',
  'clock_timestamp',
  'statement_timestamp',
  'transaction_timestamp',
  'timezone',
  'date_add',
  'date_subtract',
  // arrays, JSON, rows, sets
  'unnest',
  'array_length',
  'array_lower',
  'array_upper',
  'array_ndims',
  'array_dims',
  'cardinality',
  'array_position',
  'array_positions',
  'array_append',
  'array_prepend',
  'array_cat',
  'array_remove',
  'array_replace',
  'generate_series',
  'generate_subscripts',
  'to_json',
  'to_jsonb',
  'row_to_json',
  'array_to_json',
  'json_build_object',
  'jsonb_build_object',
  'json_build_array',
  'jsonb_build_array',
  'json_object',
  'jsonb_object',
  'json_array_elements',
  'jsonb_array_elements',
  'json_array_elements_text',
  'jsonb_array_elements_text',
  'json_array_length',
  'jsonb_array_length',
  'json_each',
  'jsonb_each',
  'json_each_text',
  'jsonb_each_text',
  'json_extract_path',
  'jsonb_extract_path',
  'json_extract_path_text',
  'jsonb_extract_path_text',
  'json_object_keys',
  'jsonb_object_keys',
  'json_typeof',
  'jsonb_typeof',
  'jsonb_pretty',
  'jsonb_strip_nulls',
  'json_strip_nulls',
  'jsonb_path_query',
  'jsonb_path_exists',
  'jsonb_path_query_array',
  'jsonb_path_query_first',
  'num_nulls',
  'num_nonnulls',
]);

/** `InsertStmt` → `insert`, `CreateTableAsStmt` → `create table as`: the kind a refusal names. */
function statementKind(node: string, body: Record<string, unknown>): string {
  switch (node) {
    case 'SelectStmt':
      return 'select';
    case 'CreateStmt':
      return 'create table';
    case 'IndexStmt':
      return 'create index';
    case 'ViewStmt':
      return 'create view';
    case 'CreateTableAsStmt':
      return body.objtype === 'OBJECT_MATVIEW' ? 'create materialized view' : 'create table as';
    case 'DropStmt':
      return `drop ${words(String(body.removeType ?? '').replace(/^OBJECT_/, ''))}`.trim();
    case 'GrantStmt':
      return body.is_grant ? 'grant' : 'revoke';
    case 'GrantRoleStmt':
      return body.is_grant ? 'grant role' : 'revoke role';
    case 'VariableSetStmt': {
      const name = typeof body.name === 'string' ? body.name : '';
      if (body.kind === 'VAR_RESET' || body.kind === 'VAR_RESET_ALL') return `reset ${name || 'all'}`;
      return `set ${name}`.trim();
    }
    case 'VariableShowStmt':
      return 'show';
    case 'TransactionStmt':
      return words(String(body.kind ?? '').replace(/^TRANS_STMT_/, '')) || 'transaction';
    case 'VacuumStmt':
      return body.is_vacuumcmd === false ? 'analyze' : 'vacuum';
    case 'DoStmt':
      return 'do';
    default:
      // FooBarStmt → foo bar (CopyStmt → copy, CreateExtensionStmt → create extension, AlterSystemStmt → alter system)
      return node
        .replace(/Stmt$/, '')
        .replace(/([a-z])([A-Z])/g, '$1 $2')
        .toLowerCase();
  }
}

function words(constant: string): string {
  return constant.toLowerCase().replaceAll('_', ' ');
}

const refusalHint = 'only one read is allowed: SELECT, WITH … SELECT or EXPLAIN SELECT';

function refuse(kind: string, detail?: string): never {
  throw new SqlRefused(kind, `Refused: ${kind}${detail ? ` (${detail})` : ''}; ${refusalHint}`);
}

/** The dotted name of a `[{String: {sval}}]` list. */
function dottedName(names: unknown): string[] {
  if (!Array.isArray(names)) return [];
  return names.map((part) => {
    const text = (part as { String?: { sval?: string } }).String?.sval;
    return typeof text === 'string' ? text : '*';
  });
}

/**
 * Checks one node and everything below it. Statements are recognised by their node name (`…Stmt`): a SelectStmt is
 * the only one allowed anywhere (a data-modifying WITH part, `INSERT … RETURNING` inside EXPLAIN and the like are
 * statements below the top one and refused by name too).
 */
function checkNode(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) checkNode(item);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const body = (child ?? {}) as Record<string, unknown>;
    if (key.endsWith('Stmt') && key !== 'SelectStmt' && /^[A-Z]/.test(key)) {
      refuse(statementKind(key, body));
    }
    switch (key) {
      case 'SelectStmt':
        if (body.intoClause) refuse('select into', 'a query may not create a table');
        if (body.lockingClause) refuse('select for update', 'a query may not lock rows');
        break;
      case 'FuncCall': {
        const name = dottedName(body.funcname);
        const [schema, last] = name.length === 2 ? name : [undefined, name[0]];
        const fn = (last ?? '').toLowerCase();
        if (name.length > 2 || (schema !== undefined && schema.toLowerCase() !== 'pg_catalog')) {
          refuse(`function ${name.join('.')}`, 'functions are called by their plain name');
        }
        if (!allowedFunctions.has(fn)) refuse(`function ${fn}`, 'not a side-effect-free function this endpoint allows');
        break;
      }
      case 'RangeVar': {
        if (typeof body.catalogname === 'string') refuse(`database ${body.catalogname}`);
        if (typeof body.schemaname === 'string') {
          refuse(`schema ${body.schemaname}`, 'name your tables without a schema: only your own tables are reachable');
        }
        const table = String(body.relname ?? '');
        if (table.toLowerCase().startsWith('pg_')) refuse(`system table ${table}`);
        break;
      }
      // A cast's type is a `typeName` field (a TypeName node elsewhere).
      case 'typeName':
      case 'TypeName': {
        const type = dottedName(body.names).at(-1)?.toLowerCase() ?? '';
        if (type.startsWith('reg')) refuse(`cast to ${type}`);
        break;
      }
    }
    checkNode(child);
  }
}

/**
 * Throws `SqlRefused` unless `sql` is one read (see the file comment); a syntax error is refused as `syntax error`
 * with PostgreSQL's own message. Answers what was allowed: `select` or `explain`.
 */
export async function checkReadOnlySql(sql: string): Promise<'select' | 'explain'> {
  const parse = await sqlParser();
  let tree: { stmts?: Array<{ stmt?: Record<string, unknown> }> };
  try {
    tree = parse(sql) as typeof tree;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new SqlRefused('syntax error', `The SQL does not parse: ${message}`);
  }
  const statements = (tree.stmts ?? []).map((entry) => entry.stmt ?? {});
  if (statements.length === 0) throw new SqlRefused('empty query', 'The SQL holds no statement');
  if (statements.length > 1) {
    const kinds = statements.map((statement) => {
      const [node, body] = Object.entries(statement)[0] ?? ['', {}];
      return statementKind(node, (body ?? {}) as Record<string, unknown>);
    });
    refuse('several statements', `found ${statements.length}: ${kinds.join(', ')}`);
  }
  const [node, body] = Object.entries(statements[0]!)[0] ?? ['', {}];
  if (node === 'ExplainStmt') {
    const query = ((body ?? {}) as { query?: Record<string, unknown> }).query ?? {};
    const [inner, innerBody] = Object.entries(query)[0] ?? ['', {}];
    if (inner !== 'SelectStmt') {
      refuse(`explain ${statementKind(inner, (innerBody ?? {}) as Record<string, unknown>)}`);
    }
    checkNode(query);
    return 'explain';
  }
  if (node !== 'SelectStmt') refuse(statementKind(node, (body ?? {}) as Record<string, unknown>));
  checkNode(statements[0]);
  return 'select';
}
