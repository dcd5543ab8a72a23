/**
 * Plans, credit rates and rate limits: the zod schema of config/plans.yaml and pure helpers over it.
 * Workflow-safe (no I/O); config/load-plans.ts reads the file.
 */
import { z } from 'zod';
import type { Catalogue, CatalogueModel, EmbeddingModel } from './catalogue.ts';

export const planNames = ['free', 'starter', 'pro', 'business'] as const;
export type PlanName = (typeof planNames)[number];

const rateLimitsSchema = z
  .object({ per_hour: z.number().int().positive().nullable(), per_day: z.number().int().positive().nullable() })
  .strict();
export type RateLimits = z.infer<typeof rateLimitsSchema>;

export const plansFileSchema = z
  .object({
    plans: z.record(
      z.enum(planNames),
      z
        .object({
          price_usd_month: z.number().nonnegative(),
          monthly_credits: z.number().int().nonnegative(),
          models: z.union([z.literal('all'), z.array(z.string()).min(1)]),
          rate_limits: rateLimitsSchema,
        })
        .strict(),
    ),
    guest_rate_limits: rateLimitsSchema,
    credit_rates: z.record(z.string(), z.number().positive()),
    batches: z
      .object({
        credit_factor: z.number().positive().max(1),
        concurrency: z.record(z.enum(planNames), z.number().int().positive()),
        /** The fraction of a provider's stated limits a batch leaves to requests someone waits on. */
        provider_reserve: z.number().min(0).max(0.9).default(0.2),
      })
      .strict()
      .default({
        credit_factor: 0.5,
        concurrency: { free: 4, starter: 16, pro: 64, business: 128 },
        provider_reserve: 0.2,
      }),
    queue: z
      .object({
        concurrency: z.record(z.enum(planNames), z.number().int().positive()),
        aging_seconds: z.number().int().positive(),
      })
      .strict()
      .default({ concurrency: { free: 2, starter: 4, pro: 16, business: 64 }, aging_seconds: 60 }),
  })
  .strict()
  .refine((file) => planNames.every((name) => file.plans[name]), { message: 'every plan must be defined' });

export type PlansFile = z.infer<typeof plansFileSchema>;
export type Plan = PlansFile['plans'][PlanName];

/** How many lines of a batch an account of `plan` runs at once (plans.yaml, `batches`). */
export function batchConcurrency(plans: PlansFile, plan: PlanName): number {
  return plans.batches.concurrency[plan] ?? 4;
}

/** Credits per 1,000 tokens: the configured rate, else derived from the model's price (see plans.yaml). */
export function creditRate(plans: PlansFile, model: Pick<CatalogueModel, 'id' | 'price'>): number {
  const configured = plans.credit_rates[model.id];
  if (configured !== undefined) return configured;
  const blended = (model.price.input_per_1m + model.price.output_per_1m) / 2;
  return Math.max(4, Math.ceil((blended * 8) / 3));
}

/** Credits per 1,000 tokens of an embedding model: the configured rate, else its input price × 8/3 (plans.yaml). */
export function embeddingCreditRate(plans: PlansFile, model: Pick<EmbeddingModel, 'id' | 'price'>): number {
  return plans.credit_rates[model.id] ?? (model.price.input_per_1m * 8) / 3;
}

/**
 * A model as plans see it: chat models carry their tier; an embedding model that the deployment runs itself counts
 * as `self-hosted`.
 */
export type PlannedModel = { id: string; tier?: CatalogueModel['tier'] };

/** Whether a plan may use a model; the self-hosted fallback is open to every plan. */
export function planAllows(plans: PlansFile, plan: PlanName, model: PlannedModel): boolean {
  if (model.tier === 'self-hosted') return true;
  const allowed = plans.plans[plan].models;
  return allowed === 'all' || allowed.includes(model.id);
}

/** The cheapest plan that unlocks a model (for error messages). */
export function cheapestPlanFor(plans: PlansFile, model: PlannedModel): PlanName | null {
  const ordered = [...planNames].sort(
    (left, right) => plans.plans[left].price_usd_month - plans.plans[right].price_usd_month,
  );
  return ordered.find((name) => name !== 'business' && planAllows(plans, name, model)) ?? null;
}

/** Every catalogue model with its credit rate (for listings). */
export function creditRates(plans: PlansFile, catalogue: Catalogue): Record<string, number> {
  return Object.fromEntries(catalogue.models.map((model) => [model.id, creditRate(plans, model)]));
}
