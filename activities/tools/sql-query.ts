/**
 * `sql_query`: an agent reads the user's own tables (the CSV and Excel files they imported with `POST /sql/csv_to_db`)
 * with one SELECT, checked and run exactly as `POST /sql/query` runs it (activities/user-data/: the parser, then the
 * user's own database role in a read-only transaction with a timeout). Called without `sql` it lists the user's tables
 * with their columns and row counts, and a refused or failing query answers that list beside the reason, so the model
 * can write the query it meant. Agent service only (it needs an account and `context.services.sql`).
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';

/** Rows a tool call answers at most (the model reads them all; the API's SQL_MAX_ROWS is for programs). */
const toolMaxRows = 100;

export const sqlQueryTool = defineTool({
  name: 'sql_query',
  description:
    "Query the user's own data tables (the CSV and Excel files they imported) with one read-only PostgreSQL SELECT " +
    '(WITH … SELECT and EXPLAIN SELECT too). Call it without sql first to list the tables, their columns and types. ' +
    'Name tables without a schema; aggregate in SQL (sum, avg, count, group by) rather than reading every row. ' +
    `At most ${toolMaxRows} rows come back; the answer says truncated when there were more.`,
  input: z
    .object({
      sql: z
        .string()
        .trim()
        .min(1)
        .max(20_000)
        .optional()
        .describe('One SELECT, e.g. "select region, sum(amount) as total from sales group by region order by 2 desc"'),
    })
    .strict(),
  timeoutMs: 30_000,
  retry: { maximumAttempts: 2, initialIntervalMs: 500 },
  maxOutputChars: 20_000,
  agentsOnly: true,
  configured: () => true,
  async run({ sql }, context) {
    if (!context.userId) throw new ToolError('data tables need a signed-in user');
    const service = context.services?.sql;
    if (!service) throw new ToolError('SQL is not available in this service');
    const tables = async () =>
      (await service.tables(context.userId!)).map((table) => ({
        table: table.name,
        rows: table.row_count,
        columns: table.columns.map((column) => `${column.name} ${column.type}`),
      }));
    if (!sql) {
      const list = await tables();
      return list.length ? { tables: list } : { tables: [], note: 'The user has imported no tables yet.' };
    }
    try {
      return await service.query(context.userId, sql, [], { maxRows: toolMaxRows });
    } catch (error) {
      const kind = (error as { kind?: unknown }).kind;
      if (typeof kind !== 'string') throw new ToolError('the query could not run', { retryable: true, cause: error });
      throw new ToolError(`${(error as Error).message}. Tables: ${JSON.stringify(await tables())}`);
    }
  },
});
