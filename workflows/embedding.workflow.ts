/**
 * embedTexts: one embedding request (`POST /v1/embeddings`, or EmbeddingService.embed for RAG), from the router's
 * plan through failover to the serving provider. Its history is the request's trace: the plan is its input, every
 * attempt a local activity (provider, outcome, latency) that holds, settles or releases its own credits; the saga
 * steps finish what an attempt could not. The vectors are not in history (common/embeddings.ts).
 *
 * Failover follows the plan only: the providers serving the requested model, then the models the caller named in
 * `fallback_models`. A provider's refusal of the request itself (400, 413, 422) ends the request without failover.
 * The loop is common/embedding-failover.ts, which a search query's embedding also runs, without a workflow.
 */
import { proxyLocalActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { EmbeddingActivities } from '../activities/embeddings/embedding-activities.ts';
import type { CompletionActivities } from '../activities/completion-activities.ts';
import type { Attempt } from '../common/completion.ts';
import { embedWithFailover } from '../common/embedding-failover.ts';
import type { EmbeddingInput, EmbeddingResult, EmbedTextsWorkflow } from '../common/embeddings.ts';
import { untilStoresAnswer } from '../common/retry-policies.ts';
import { modelKey } from '../common/search-attributes.ts';
import { traceQuery } from './completion.workflow.ts';

// One try per candidate: failover is the workflow's decision (an outage of the platform's own database is waited out:
// common/retry-policies.ts). The local engine may take minutes for a large batch.
const { callEmbeddingProvider } = proxyLocalActivities<EmbeddingActivities>({
  startToCloseTimeout: '10m',
  retry: untilStoresAnswer,
});

// Saga steps: idempotent ledger writes, retried until the database answers (the vectors are already out).
const { settleCredits, releaseCredits } = proxyLocalActivities<CompletionActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function embedTexts(input: EmbeddingInput): Promise<EmbeddingResult> {
  const attempts: Attempt[] = [];
  setHandler(traceQuery, () => ({ status: 'running', attempts }));
  // The failover, written once for this workflow and for a query embedded in its caller (common/embedding-failover.ts).
  return embedWithFailover(input, workflowInfo().workflowId, attempts, {
    call: (attempt) => callEmbeddingProvider(attempt),
    settle: (settlement) => settleCredits(settlement),
    release: (key) => releaseCredits(key),
    servedBy: (model) => upsertSearchAttributes([{ key: modelKey, value: model }]),
  });
}

// The signature its starters use (common/embeddings.ts) is this workflow's: a change to either fails to compile.
const _signature: EmbedTextsWorkflow = embedTexts;
