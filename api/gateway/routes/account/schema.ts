import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';
import { auditReasonSchema } from '../../../services/admin/audit.ts';

/** `GET /api/v1/usage` query: an optional time range (ISO 8601) and grouping by model. */
export const usageQuerySchema = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    group_by: z.literal('model').optional(),
  })
  .strict();

/** What an operator may change of an account: its plan, its custom limits (null clears them). */
export const accountChangeFields = z.strictObject({
  plan: z.enum(planNames).optional(),
  custom_limits: z
    .strictObject({
      per_hour: z.number().int().positive().nullable().optional(),
      per_day: z.number().int().positive().nullable().optional(),
      models: z.union([z.literal('all'), z.array(z.string().min(1)).min(1)]).optional(),
    })
    .nullable()
    .optional(),
});

export const changesSomething = [
  (update: { plan?: unknown; custom_limits?: unknown }) =>
    update.plan !== undefined || update.custom_limits !== undefined,
  { message: 'give plan, custom_limits or both' },
] as const;

/**
 * `PATCH /api/v1/account/{id}` (operator only): move an account to a plan, set or clear custom limits; `reason`, for
 * the audit log, is optional on this door (the console's requires it).
 */
export const accountUpdateSchema = accountChangeFields
  .extend({ reason: auditReasonSchema.optional() })
  .refine(...changesSomething);
