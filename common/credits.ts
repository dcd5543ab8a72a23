/**
 * Credit arithmetic that workflow code needs. Kept apart from plans.ts (zod schemas): every module the workflow
 * bundle reaches is evaluated again for each workflow, and building zod schemas there cost about 5 ms of CPU per
 * completion (test/replay/bundle.test.ts keeps zod out of the bundle).
 */

/** Credits for a number of tokens at a rate: rounded up, at least 1 for any request. */
export function creditsFor(tokens: number, rate: number): number {
  return Math.max(1, Math.ceil((tokens * rate) / 1000));
}
