/** The models the caller's plan allows, from `GET /billing/plans` (for choosing an agent's model). */
import { api, data, type Answer } from '../api/client.ts';

export type Plan = Answer<'/billing/plans', 'get'>['plans'][number];

export async function loadPlans(): Promise<Plan[]> {
  return (await data(api.GET('/billing/plans'))).plans;
}

export async function modelsForPlan(plan: string | undefined): Promise<string[]> {
  const plans = await loadPlans();
  const all = [...new Set(plans.flatMap((item) => (Array.isArray(item.models) ? item.models : [])))].sort();
  const mine = plans.find((item) => item.id === plan);
  return mine && Array.isArray(mine.models) && mine.models.length ? [...mine.models].sort() : all;
}
