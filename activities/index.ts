/** createActivities(deps): every activity the worker registers, built from injected dependencies. */
import { createCompletionActivities } from './completion-activities.ts';
import type { CreditLedger } from './credits/credit-ledger.ts';
import type { ProviderCalls } from './provider-calls.ts';

export interface ActivityDependencies {
  calls: ProviderCalls;
  ledger: CreditLedger;
}

export function createActivities(dependencies: ActivityDependencies) {
  return { ...createCompletionActivities(dependencies) };
}

export type Activities = ReturnType<typeof createActivities>;
