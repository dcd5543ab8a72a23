/** createActivities(deps): every activity the worker registers, built from injected dependencies. */
import { createCompletionActivities, type CompletionActivityDependencies } from './completion-activities.ts';

export type ActivityDependencies = CompletionActivityDependencies;

export function createActivities(dependencies: ActivityDependencies) {
  return { ...createCompletionActivities(dependencies) };
}

export type Activities = ReturnType<typeof createActivities>;
