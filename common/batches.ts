/**
 * Batches of the gateway's Batch API (OpenAI's `/v1/batches`): what the batch workflow takes, and the names its lines
 * go by. Workflow-safe types shared by api, workflows and activities (docs/client-apis.md, "Batches").
 */

/** The endpoints a batch runs its lines on. */
export const batchRunEndpoints = ['/v1/chat/completions', '/v1/embeddings', '/v1/messages', '/v1/responses'] as const;
export type BatchEndpoint = (typeof batchRunEndpoints)[number];

export const batchStatuses = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const;
export type BatchStatus = (typeof batchStatuses)[number];

/** Workflow id of a batch: the business id an operator searches for. */
export function batchWorkflowId(batchId: string): string {
  return `batch-${batchId}`;
}

/**
 * The ledger's key base of a batch's line (`batch-<id>/<line>`): its attempts are `#1`, `#2`, … as a completion's are.
 * The part before the `/` names the workflow that settles it (the abandoned-holds sweep asks about that one).
 */
export function batchLineLedgerId(batchId: string, line: number): string {
  return `${batchWorkflowId(batchId)}/${line}`;
}

/** The id a line's answer carries (`request_id` in the output file, and the Temporal-free trace of its attempts). */
export function batchLineRequestId(batchId: string, line: number): string {
  return `${batchId.replace(/^batch_/, 'batchreq_')}_${line}`;
}

export interface BatchRunInput {
  batchId: string;
  userId: string;
  endpoint: BatchEndpoint;
  /** When the batch expires (epoch ms): lines not started by then are not run. */
  expiresAt: number;
  /** Most lines in flight at once (the plan's `batch_concurrency`). */
  concurrency: number;
  /** Carried across continue-as-new; absent on the first run. */
  progress?: BatchProgress;
}

export interface BatchProgress {
  /** Lines in the batch (known once validated). */
  total: number;
  /** The next line never started. */
  next: number;
  /** Lines that found no capacity, to run again no earlier than `notBefore` (epoch ms), oldest first. */
  deferred: Array<{ line: number; notBefore: number }>;
  /** Lines in flight allowed now: halved when a line finds no capacity, grown by one with each line answered. */
  window: number;
  /** Consecutive rounds without capacity (the back-off's exponent). */
  saturatedRounds: number;
  /** A cancel was asked for. */
  cancelled: boolean;
}

/** What running one line came to (the local activity's result: small, the answer itself is in `batch_lines`). */
export type BatchLineOutcome =
  | { outcome: 'recorded'; ok: boolean }
  /** Every provider of the line's model was saturated (429, overloaded, circuit open): run it again later. */
  | { outcome: 'no-capacity'; retryAfterSeconds?: number }
  /** The batch was cancelled meanwhile, or its window passed: the line was not run. */
  | { outcome: 'cancelled' }
  | { outcome: 'expired' };

/** How a batch's run ends. */
export type BatchEnding = 'completed' | 'expired' | 'cancelled';
