/** The Files API's shapes (OpenAI's, `/v1/files`): what the routes take and answer. */
import { z } from 'zod';
import { filePurposes } from '../../../../activities/files/api-files.ts';
import { listPage } from '../../../openapi/contract.ts';

export const purposeSchema = z.enum(filePurposes, {
  error: `purpose must be one of ${filePurposes.join(', ')} (the files this platform serves are batch inputs)`,
});

export const listQuerySchema = z.object({
  purpose: z.string().max(64).optional(),
  after: z.string().max(64).optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a number')
    .transform(Number)
    .refine((limit) => limit >= 1 && limit <= 10_000, 'must be 1 to 10000')
    .optional(),
  order: z.enum(['asc', 'desc']).optional(),
});

export const fileObjectSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int(),
    created_at: z.number().int(),
    filename: z.string(),
    purpose: z.string(),
    status: z.literal('processed'),
    expires_at: z.null(),
    status_details: z.null(),
  })
  .meta({ id: 'File' });

export const fileListSchema = listPage(fileObjectSchema, 'FileList');
