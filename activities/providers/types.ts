/**
 * The contract every provider adapter implements. Adapters know their wire protocol only: nothing of Koa,
 * MikroORM or Temporal. `fetch` is injected so tests can point them anywhere.
 */
import type {
  ChatMessage,
  FinishReason,
  ReasoningEffort,
  ResponseFormat,
  Tool,
  ToolCall,
  ToolChoice,
  Usage,
} from '../../common/chat.ts';
import type { StreamPart } from '../../common/stream-parts.ts';

export type WireProtocol = 'openai' | 'anthropic' | 'gemini';

/** A provider-neutral request; `model` is the upstream model id (e.g. `claude-sonnet-4-6-20250929`). */
export interface ProviderRequest {
  model: string;
  messages: ChatMessage[];
  tools?: Tool[];
  toolChoice?: ToolChoice;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  /** Anthropic's and Gemini's top-k sampling; OpenAI-compatible upstreams have none and do not get it. */
  topK?: number;
  stop?: string[];
  seed?: number;
  user?: string;
  responseFormat?: ResponseFormat;
  presencePenalty?: number;
  frequencyPenalty?: number;
  parallelToolCalls?: boolean;
  /** Asks for reasoning; each adapter maps it onto its protocol's own switch (see ./reasoning.ts). */
  reasoningEffort?: ReasoningEffort;
}

export interface ProviderResponse {
  /** The answer only: reasoning never counts as content. */
  content: string | null;
  /** The model's reasoning text, present when the provider returned some. */
  reasoning?: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  /** Which of the request's stop sequences ended the answer, where the provider says so (Anthropic). */
  stopSequence?: string;
  /** Null when the provider reported none. */
  usage: Usage | null;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Called with the headers of the provider's answer, a refusal's included (its rate limits: ./rate-limits.ts). */
  onHeaders?: (headers: Headers) => void;
}

export interface ProviderAdapter {
  readonly provider: string;
  readonly protocol: WireProtocol;
  generate(request: ProviderRequest, options?: CallOptions): Promise<ProviderResponse>;
  /**
   * Yields reasoning, text and tool-call deltas, then exactly one `finish`, then `usage` when the provider sent
   * it. Reasoning comes as `reasoning-delta` parts, never as text.
   */
  stream(request: ProviderRequest, options?: CallOptions): AsyncIterable<StreamPart>;
}

export interface ProviderConfig {
  provider: string;
  protocol: WireProtocol;
  baseUrl: string;
  apiKey: string;
  /** Time allowed until response headers arrive. */
  connectTimeoutMs?: number;
  /** Longest silence allowed between two stream events (spec: 30 s idle). */
  idleTimeoutMs?: number;
  /** Whole non-streaming request (spec: 60 s). */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
}

export type ProviderFailureKind = 'http' | 'network' | 'timeout' | 'stalled' | 'malformed' | 'aborted';

/**
 * A failed upstream call. `retryable` says whether another provider may succeed: network faults, timeouts,
 * stalls, malformed output, 429, 5xx and our own credential problems (401/403/404 from upstream) fail over;
 * the caller's own bad request (400, 413, 422) does not.
 */
export class ProviderError extends Error {
  readonly provider: string;
  readonly kind: ProviderFailureKind;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;

  constructor(options: {
    provider: string;
    kind: ProviderFailureKind;
    message: string;
    status?: number;
    retryAfterSeconds?: number;
    retryable?: boolean;
  }) {
    super(options.message);
    this.name = 'ProviderError';
    this.provider = options.provider;
    this.kind = options.kind;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.retryable = options.retryable ?? isRetryable(options.kind, options.status);
  }
}

function isRetryable(kind: ProviderFailureKind, status: number | undefined): boolean {
  if (kind === 'aborted') return false;
  if (kind !== 'http' || status === undefined) return true;
  return !(status === 400 || status === 413 || status === 422);
}

/** A provider-neutral embedding request; `model` is the upstream model id. */
export interface EmbeddingRequest {
  model: string;
  texts: string[];
  /** A shorter vector than the model's own (the models that take it: catalogue `shortenable`). */
  dimensions?: number;
  user?: string;
}

export interface EmbeddingResponse {
  /** One vector per text, in the texts' order, each of length 1. */
  vectors: Float32Array[];
  /** Input tokens as the provider counted them; null when it reported none (Gemini never does). */
  promptTokens: number | null;
}

/** The embedding method of a provider whose wire protocol has one (OpenAI-compatible servers, Gemini). */
export interface EmbeddingAdapter {
  readonly provider: string;
  readonly protocol: WireProtocol;
  embed(request: EmbeddingRequest, options?: CallOptions): Promise<EmbeddingResponse>;
}
