import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';
import { auditReasonSchema } from '../../../services/admin/audit.ts';

export const createKeySchema = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    /** Operator only: the user to create the key for (found or created by e-mail). */
    email: z.email().optional(),
    /** Operator only: the plan of an account this creates (an account found keeps its own). */
    plan: z.enum(planNames).optional(),
    /** Operator only: why, for the operator console's audit log (trimmed, 1 to 200 characters). */
    reason: auditReasonSchema.optional(),
  })
  .strict();
