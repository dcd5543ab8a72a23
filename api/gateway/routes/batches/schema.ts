/** The Batch API's shapes (OpenAI's, `/v1/batches`): what the routes take and answer. */
import { z } from 'zod';
import { batchRunEndpoints, batchStatuses } from '../../../../common/batches.ts';
import { listPage } from '../../../openapi/contract.ts';

/** OpenAI's metadata: at most 16 keys of up to 64 characters, each value up to 512. */
const metadataSchema = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((metadata) => Object.keys(metadata).length <= 16, 'metadata has at most 16 keys');

export const createBatchSchema = z
  .strictObject({
    input_file_id: z.string().min(1).max(128),
    endpoint: z.enum(batchRunEndpoints, {
      error: `endpoint must be one of ${batchRunEndpoints.join(', ')} (the endpoints batches run)`,
    }),
    completion_window: z.literal('24h', { error: 'completion_window must be 24h' }),
    metadata: metadataSchema.nullable().optional(),
    /** OpenAI's: when the output and error files expire. Accepted; this platform keeps them until they are deleted. */
    output_expires_after: z
      .strictObject({ anchor: z.literal('created_at'), seconds: z.number().int().min(3600).max(2_592_000) })
      .optional(),
  })
  .meta({ id: 'BatchCreateRequest' });

export const listQuerySchema = z.object({
  after: z.string().max(128).optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a number')
    .transform(Number)
    .refine((limit) => limit >= 1 && limit <= 100, 'must be 1 to 100')
    .optional(),
});

const seconds = z.number().int().nullable();

export const batchObjectSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.string(),
    errors: z
      .strictObject({
        object: z.literal('list'),
        data: z.array(
          z.strictObject({
            code: z.string(),
            message: z.string(),
            param: z.string().nullable(),
            line: z.number().int().nullable(),
          }),
        ),
      })
      .nullable(),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(batchStatuses),
    output_file_id: z.string().nullable(),
    error_file_id: z.string().nullable(),
    created_at: z.number().int(),
    in_progress_at: seconds,
    expires_at: seconds,
    finalizing_at: seconds,
    completed_at: seconds,
    failed_at: seconds,
    expired_at: seconds,
    cancelling_at: seconds,
    cancelled_at: seconds,
    request_counts: z.strictObject({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    usage: z.strictObject({
      input_tokens: z.number().int(),
      output_tokens: z.number().int(),
      total_tokens: z.number().int(),
      input_tokens_details: z.strictObject({ cached_tokens: z.number().int() }),
      output_tokens_details: z.strictObject({ reasoning_tokens: z.number().int() }),
    }),
    metadata: z.record(z.string(), z.string()).nullable(),
    lines_waiting: z
      .strictObject({ count: z.number().int(), since: seconds, model: z.string().nullable() })
      .optional()
      .meta({
        description:
          'Tessera’s own: while lines wait for capacity (every provider of their model saturated, or down to the ' +
          'reserve of its limits), how many, since when, and the model the latest asked for',
      }),
  })
  .meta({ id: 'Batch' });

export const batchListSchema = listPage(batchObjectSchema, 'BatchList');
