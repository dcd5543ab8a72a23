/** `/sql/*` request bodies (spec 4.9), strict. */
import { z } from 'zod';

/** `POST /sql/query`: one read, with `$1`, `$2` … parameters; `max_rows` lowers SQL_MAX_ROWS for this query. */
export const sqlQuerySchema = z
  .object({
    sql: z.string().trim().min(1, 'sql must not be empty').max(100_000),
    params: z
      .array(z.union([z.string().max(100_000), z.number(), z.boolean(), z.null()]))
      .max(100)
      .default([]),
    max_rows: z.number().int().min(1).optional(),
  })
  .strict();

/** `POST /sql/csv_to_db`: an uploaded CSV or xlsx file; the table's name (default: from the file's name). */
export const csvToDbSchema = z
  .object({
    file_id: z.string().trim().min(1).max(200),
    table: z.string().trim().min(1).max(63).optional(),
    replace: z.boolean().default(false),
  })
  .strict();
