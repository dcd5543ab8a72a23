/**
 * What the completion workflow takes and returns, and the events a streamed completion emits.
 * Workflow-safe types shared by api, workflows and activities.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import type { ChatCompletionRequest, FinishReason, ToolCall, Usage } from './chat.ts';
import type { ModelPrice } from './catalogue.ts';
import type { ErrorType } from './errors.ts';
import type { StreamPart } from './stream-parts.ts';
import type { ChatTurnEvent } from './chat-turn.ts';
import type { ResponseRecord } from './responses.ts';

export const completionsTaskQueue = 'tessera-completions';

/** Workflow id of a completion: the business id an operator searches for. */
export function completionWorkflowId(responseId: string): string {
  return `completion-${responseId}`;
}

export interface CompletionInput {
  /** The response id (`chatcmpl-…`), also the stream journal key. */
  requestId: string;
  userId: string;
  created: number;
  request: ChatCompletionRequest;
  /** The router's plan, made by the API from the catalogue and the breaker state at the time. */
  candidates: Candidate[];
  /** Credits are reserved and settled (false for the operator key). */
  metered?: boolean;
  /** A Response of the Responses door: the workflow keeps its row (common/responses.ts). */
  response?: ResponseRecord;
  /**
   * How long a synchronous request may wait for capacity when every provider is saturated, in seconds (the
   * `X-Tessera-Capacity-Wait` header, docs/capacity-queue.md); absent: it fails at once, as before.
   */
  capacityWaitSeconds?: number;
}

/** One model to try, as planned by the router. */
export interface Candidate {
  /** The id the response names when this candidate serves (a pin if one was requested). */
  model: string;
  /** The catalogue id (the plain id of a pin): what plans and credit rates are keyed by. */
  modelId?: string;
  /** Credits per 1,000 tokens at this model (absent on unmetered requests and in old histories). */
  creditRate?: number;
  provider: string;
  upstreamModel: string;
  tier: string;
  price: ModelPrice;
  /** The provider's breaker is open but its cool-down passed: this call is the half-open probe. */
  probe: boolean;
}

export type AttemptOutcome = 'succeeded' | 'failed' | 'skipped';

export interface Attempt {
  attempt: number;
  model: string;
  provider: string;
  outcome: AttemptOutcome;
  latency_ms: number;
  status?: number;
  error?: string;
}

export interface CompletionMessage {
  /** The answer only; reasoning is never part of it. */
  content: string | null;
  toolCalls: ToolCall[];
  /**
   * A non-streamed answer's reasoning, when the provider returned some (shown as `reasoning_content`). Streamed
   * reasoning goes to the client only: a collected streamed message has none.
   */
  reasoning?: string;
  /**
   * Which of the request's stop sequences ended the answer, where its provider says so (Anthropic does; OpenAI's and
   * Gemini's APIs do not tell a stop sequence from a natural end). The Messages door answers `stop_sequence` with it.
   */
  stopSequence?: string;
}

export interface CompletionResult {
  requestId: string;
  model: string;
  provider: string;
  created: number;
  finishReason: FinishReason;
  /** Null for streamed completions: the text went to the client and the stream journal, not to history. */
  message: CompletionMessage | null;
  usage: Usage;
  /** True when the provider reported no usage and it was estimated. */
  usageEstimated: boolean;
  attempts: Attempt[];
  /** A background Response cancelled while it ran: the answer is what was generated until then. */
  stopped?: boolean;
}

/** Details carried by a failed completion (ApplicationFailure details[0]). */
export interface CreditSettlement {
  userId: string;
  workflowId: string;
  attempt: number;
  model: string;
  creditRate: number;
  usage: Usage;
  usageEstimated: boolean;
}

export interface CompletionFailureDetails {
  errorType: ErrorType;
  attempts: Attempt[];
  retryAfterSeconds?: number;
  /** A stream cut after content: the position after its last event (a chat turn's final event goes there). */
  nextSeq?: number;
}

/** The failure a model call (or the workflow around it) ends with; its type is the API error type. */
export function modelCallFailure(
  errorType: ErrorType,
  message: string,
  attempts: Attempt[],
  retryAfterSeconds?: number,
  nextSeq?: number,
): ApplicationFailure {
  const details: CompletionFailureDetails = { errorType, attempts, retryAfterSeconds, nextSeq };
  return ApplicationFailure.create({ type: errorType, message, nonRetryable: true, details: [details] });
}

/**
 * A failed provider attempt as failover takes it (the completion's, a chat turn's and an embedding's): recorded in
 * `attempts` as failed, with its message and details returned; any other error is not a provider's and is rethrown.
 * A local activity's failure may arrive bare or wrapped in an ActivityFailure.
 */
export function failedAttempt(
  error: unknown,
  attempts: Attempt[],
  tried: Pick<Attempt, 'attempt' | 'model' | 'provider'>,
): { message: string; details: ProviderFailureDetails | undefined } {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'ProviderError') throw error;
  const details = cause.details?.[0] as ProviderFailureDetails | undefined;
  attempts.push({
    ...tried,
    outcome: 'failed',
    latency_ms: details?.latencyMs ?? 0,
    status: details?.status,
    error: cause.message,
  });
  return { message: cause.message, details };
}

/** Failure details of a provider attempt (an ApplicationFailure of type `ProviderError`): what failover decides on. */
export interface ProviderFailureDetails {
  kind: string;
  status?: number;
  retryable: boolean;
  /** Part of the answer already reached the client: failing over would repeat or garble it. */
  contentSent: boolean;
  retryAfterSeconds?: number;
  latencyMs: number;
  /** The attempt's hold was released already. */
  ledgerDone?: boolean;
  /** With `contentSent`: the stream position after the attempt's last event. */
  nextSeq?: number;
}

/** A streamed completion's events, in order, as relayed in-process and written to the stream journal. */
export type StreamEvent =
  | { type: 'model'; model: string }
  | StreamPart
  | { type: 'error'; errorType: ErrorType; message: string }
  /** An attempt ended without an answer (failed or skipped); in-process only, never journaled. */
  | { type: 'attempt-ended'; outcome: 'failed' | 'skipped' }
  /** A non-streamed attempt's answer, handed to the waiting response in-process; never journaled. */
  | {
      type: 'completion';
      model: string;
      message: CompletionMessage;
      finishReason: FinishReason;
      usage: Usage;
      usageEstimated: boolean;
      /** How long the provider took to answer (ms). */
      upstreamMs: number;
    }
  /** A chat turn's events (workflows/chat-turn.workflow.ts), on the same stream as its model calls' parts. */
  | ChatTurnEvent
  /**
   * Embedding vectors for a caller in another process (activities/embeddings/embedding-calls.ts): vectors `first`
   * onwards, `dimensions` values each, as little-endian float32 in base64.
   */
  | { type: 'vectors'; first: number; dimensions: number; data: string };

export interface SequencedStreamEvent {
  seq: number;
  event: StreamEvent;
}
