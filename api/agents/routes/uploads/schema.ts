/** Request shapes of the upload routes (api/agents/routes/uploads/routes.ts). */
import { z } from 'zod';

/** A display name: no path, 1 to 255 characters (the text rule itself is the edge's: api/text-policy.ts). */
export const fileNameSchema = z
  .string()
  .transform((name) => name.split(/[\\/]/).pop()!.trim())
  .pipe(z.string().min(1, 'must name the file').max(255));

/** `POST /upload` as JSON, for API clients: the bytes as base64 (or a `data:` URL). */
export const base64UploadSchema = z
  .object({
    file_name: fileNameSchema,
    content_base64: z.string().min(1),
  })
  .strict();

/** A file id as issued: anything else names no file (404, as another user's). */
export const fileIdPattern = /^file_[A-Za-z0-9_-]{24}$/;

export const downloadQuerySchema = z.object({ download: z.enum(['0', '1', 'true', 'false']).optional() }).loose();

/**
 * `GET /upload`: `limit`, the newest files to list (0 to 1000; without it, all): `limit=0` answers the quota figures
 * alone, which the web app's composer reads before an upload.
 */
export const listQuerySchema = z.object({ limit: z.coerce.number().int().min(0).max(1000).optional() }).strict();
