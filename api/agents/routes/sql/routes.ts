/**
 * Read-only SQL and table imports (spec 4.9 and 8; docs/files-and-rag.md): `POST /sql/query` runs
 * one read on the caller's own tables, `GET /sql/tables` lists them, `POST /sql/csv_to_db` imports an uploaded CSV or
 * Excel file into a new table (201 when done within SQL_IMPORT_WAIT, else 202 with the import), `GET /sql/imports/{id}`
 * follows an import. Every route needs a login; another user's file or import is answered as one that does not exist.
 */
import Router from '@koa/router';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { SqlService } from '../../../services/sql/service.ts';
import { csvToDbSchema, sqlQuerySchema } from './schema.ts';

export function sqlRoutes(sql: SqlService) {
  const router = new Router<CallerState>();

  router.post('/sql/query', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = sqlQuerySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await sql.query(principal.userId, parsed.data.sql, parsed.data.params, parsed.data.max_rows);
  });

  router.get('/sql/tables', async (context) => {
    const principal = requireCaller(context.state);
    context.body = { tables: await sql.tables(principal.userId) };
  });

  router.post('/sql/csv_to_db', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = csvToDbSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const started = await sql.startImport(principal.userId, parsed.data);
    context.status = started.done ? 201 : 202;
    context.set('Location', `/sql/imports/${started.import.id}`);
    context.body = started.import;
  });

  router.get('/sql/imports/:id', async (context) => {
    const principal = requireCaller(context.state);
    context.body = await sql.getImport(principal.userId, context.params.id!);
  });

  return router;
}
