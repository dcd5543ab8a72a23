/**
 * Retry policies shared by workflows (workflow-safe). `untilStoresAnswer` is for a step whose own failures are final
 * (a provider's or an engine's failure is a non-retryable ApplicationFailure: failover is the workflow's decision)
 * but which must wait out an outage of the platform's own stores: its activity throws those as a retryable
 * `StoreUnavailable` (activities/failures.ts), tried again with backoff, up to 10 s apart, for as long as the outage
 * lasts (docs/operations.md, "When a part fails").
 */
export const untilStoresAnswer = { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' } as const;
