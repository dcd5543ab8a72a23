import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';

/** `GET /api/v1/usage` query: an optional time range (ISO 8601) and grouping by model. */
export const usageQuerySchema = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    group_by: z.literal('model').optional(),
  })
  .strict();

/** `PATCH /api/v1/account/{id}` (operator only): move an account to a plan, set or clear custom limits. */
export const accountUpdateSchema = z
  .object({
    plan: z.enum(planNames).optional(),
    custom_limits: z
      .object({
        per_hour: z.number().int().positive().nullable().optional(),
        per_day: z.number().int().positive().nullable().optional(),
        models: z.union([z.literal('all'), z.array(z.string().min(1)).min(1)]).optional(),
      })
      .strict()
      .nullable()
      .optional(),
  })
  .strict()
  .refine((update) => update.plan !== undefined || update.custom_limits !== undefined, {
    message: 'give plan, custom_limits or both',
  });
