/** Reads and validates config/plans.yaml (or PLANS_PATH). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { plansFileSchema, type PlansFile } from '../common/plans.ts';

export const defaultPlansPath = fileURLToPath(new URL('./plans.yaml', import.meta.url));

export function loadPlans(environment: Record<string, string | undefined> = process.env): PlansFile {
  const path = environment.PLANS_PATH ?? defaultPlansPath;
  const parsed = plansFileSchema.safeParse(parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid plans file ${path}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
