import { z } from 'zod';
import { planNames } from '../../../../common/plans.ts';

export const createKeySchema = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    /** Operator only: the user to create the key for (found or created by e-mail). */
    email: z.email().optional(),
    plan: z.enum(planNames).optional(),
  })
  .strict();
