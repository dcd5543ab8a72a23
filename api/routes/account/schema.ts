import { z } from 'zod';

/** `GET /api/v1/usage` query: an optional time range (ISO 8601) and grouping by model. */
export const usageQuerySchema = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    group_by: z.literal('model').optional(),
  })
  .strict();
