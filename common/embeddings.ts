/**
 * What the embedding workflow takes and returns. Workflow-safe types shared by api, workflows and activities.
 * The vectors themselves never enter workflow history (a 1536-dimensional vector is 6 KB; a request of 2,048 of
 * them 12 MB): the provider call hands them to the waiting caller in-process, or, when the caller is in another
 * process, through the stream journal (see activities/embeddings/embedding-calls.ts).
 */
import type { Attempt } from './completion.ts';

/** Workflow id of an embedding request: the business id an operator searches for. */
export function embeddingWorkflowId(requestId: string): string {
  return `embedding-${requestId}`;
}

/** One provider to try for the request's model, as planned by the router. */
export interface EmbeddingCandidate {
  /** The catalogue id of the model this candidate serves (the response's `model`). */
  model: string;
  provider: string;
  upstreamModel: string;
  /** Credits per 1,000 tokens at this model (absent on unmetered requests). */
  creditRate?: number;
  /** The provider's breaker is open but its cool-down passed: this call is the half-open probe. */
  probe: boolean;
}

export interface EmbeddingInput {
  /** The request id (`emb-…`): the workflow's business id and the handover and journal key. */
  requestId: string;
  userId: string;
  created: number;
  /** The model the caller asked for. */
  model: string;
  texts: string[];
  dimensions?: number;
  user?: string;
  /** The texts' tokens as the gateway counts them: every hold, and the usage when a provider reports none. */
  promptTokens: number;
  /** The router's plan: the providers of the model, then the caller's `fallback_models`, in order. */
  candidates: EmbeddingCandidate[];
  /** Credits are reserved and settled (false for the operator key). */
  metered: boolean;
  /** Attempt 1's hold was taken before the workflow started (by the API's admission); later holds are the attempts'. */
  firstAttemptHeld: boolean;
}

export interface EmbeddingUsage {
  prompt_tokens: number;
  total_tokens: number;
}

/** The workflow's result: everything but the vectors (see the file comment). */
export interface EmbeddingResult {
  requestId: string;
  model: string;
  provider: string;
  /** Vectors returned, each of `dimensions` values. */
  count: number;
  dimensions: number;
  usage: EmbeddingUsage;
  /** True when the provider reported no usage and the gateway's count was billed. */
  usageEstimated: boolean;
  attempts: Attempt[];
}

/**
 * The embedding workflow's signature (workflows/embedding.workflow.ts `embedTexts`), for the code that starts it
 * without importing the workflow's file (activities/embeddings/embedding-service.ts).
 */
export type EmbedTextsWorkflow = (input: EmbeddingInput) => Promise<EmbeddingResult>;
