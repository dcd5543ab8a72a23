import { z } from 'zod';

/** The plans a customer can buy through Checkout (free is the default, business is operator-managed). */
export const purchasablePlans = ['starter', 'pro'] as const;
export type PurchasablePlan = (typeof purchasablePlans)[number];

/** `POST /api/v1/billing/checkout` body. */
export const checkoutBodySchema = z.object({
  plan: z.enum(purchasablePlans, { error: 'plan must be one of: starter, pro' }),
});

/** `POST /api/v1/coupon/validate` body. */
export const couponBodySchema = z.object({
  code: z.string().trim().min(1, 'code is required').max(200),
});

/**
 * `POST /api/v1/coupon/validate` answer (always 200). A valid code carries every field (null when it does not
 * apply: `amount_off`/`currency` for a percentage coupon, `duration_in_months` unless `repeating`); an unknown,
 * inactive or expired code is just `{valid: false, code}`.
 */
export type CouponAnswer =
  | {
      valid: true;
      code: string;
      /** Found as a customer-facing promotion code, or as a coupon id. */
      source: 'promotion_code' | 'coupon';
      name: string | null;
      percent_off: number | null;
      /** In the currency's smallest unit (cents). */
      amount_off: number | null;
      currency: string | null;
      duration: 'once' | 'repeating' | 'forever' | string;
      duration_in_months: number | null;
    }
  | { valid: false; code: string };
