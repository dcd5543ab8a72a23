/** Contracts of read-only SQL and table imports (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { csvToDbSchema, sqlQuerySchema } from './schema.ts';

const tags = ['SQL'];
const column = z.strictObject({ name: z.string(), type: z.string() });

const tableImport = z
  .strictObject({
    id: z.string(),
    file_id: z.string(),
    file_name: z.string(),
    table: z.string(),
    replace: z.boolean(),
    status: z.enum(['inferring', 'loading', 'completed', 'failed']),
    rows_read: z.number().int(),
    result: z
      .strictObject({
        table: z.string(),
        rows: z.number().int(),
        columns: z.array(z.strictObject({ name: z.string(), type: z.string(), header: z.string() })),
        bad_rows: z.number().int(),
        bad_row_samples: z.array(z.strictObject({ line: z.number().int(), reason: z.string() })),
      })
      .nullable(),
    error: z.string().nullable(),
    created_at: isoDate,
    finished_at: isoDate.nullable(),
  })
  .meta({ id: 'TableImport' });

const located = (description: string) => ({
  ...json(tableImport, description),
  headers: z.object({ location: z.string() }),
});

export const sqlContracts = [
  route({
    method: 'POST',
    path: '/sql/query',
    summary: 'Run one read on the caller’s own tables',
    tags,
    access: 'caller',
    request: { body: sqlQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          columns: z.array(column),
          rows: z.array(z.array(z.unknown())),
          row_count: z.number().int(),
          truncated: z.boolean().meta({ description: 'More rows than the row limit: the rest were not read' }),
          elapsed_ms: z.number(),
        }),
        'The rows',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/sql/tables',
    summary: 'The caller’s tables',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          tables: z.array(
            z.strictObject({
              name: z.string(),
              columns: z.array(column),
              row_count: z.number().int(),
              import_id: z.string().nullable(),
              file_id: z.string().nullable(),
            }),
          ),
        }),
        'The tables',
      ),
    },
  }),
  route({
    method: 'POST',
    path: '/sql/csv_to_db',
    summary: 'Import an uploaded CSV or Excel file into a new table',
    tags,
    access: 'caller',
    request: { body: csvToDbSchema },
    responses: {
      201: located('Imported within SQL_IMPORT_WAIT'),
      202: located('Still importing: follow `Location`'),
    },
    errors: { 404: 'No such file of the caller’s', 409: 'The table exists (send `replace: true`)' },
  }),
  route({
    method: 'GET',
    path: '/sql/imports/:id',
    summary: 'An import’s status and result',
    tags,
    access: 'caller',
    responses: { 200: json(tableImport, 'The import') },
    errors: { 404: 'No such import of the caller’s' },
  }),
];
