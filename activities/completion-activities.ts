/**
 * Activities of the completion workflow. Both run as local activities: in the process that runs the
 * workflow task, which for an eagerly started completion is the API process holding the HTTP response.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { LoadedCatalogue, ProviderEndpoint } from '../config/load-catalogue.ts';
import { resolveModel } from '../common/catalogue.ts';
import type { ChatCompletionRequest, FinishReason, ToolCall, Usage } from '../common/chat.ts';
import type { Candidate, CompletionMessage, StreamEvent } from '../common/completion.ts';
import { createProviderAdapter } from './providers/index.ts';
import { ProviderError, type ProviderAdapter, type ProviderRequest } from './providers/types.ts';
import { chooseAutoTier } from './routing/auto-model.ts';
import type { CircuitBreaker } from './routing/circuit-breaker.ts';
import { planCandidates } from './routing/plan-candidates.ts';
import type { StreamHub } from './streaming/stream-hub.ts';
import type { StreamJournal } from './streaming/stream-journal.ts';

export interface CompletionActivityDependencies {
  catalogue: LoadedCatalogue;
  breaker: CircuitBreaker;
  hub: StreamHub;
  journal: StreamJournal;
  /** Timeouts handed to every adapter (spec section 8 values by default). */
  providerTimeouts?: { connectTimeoutMs?: number; idleTimeoutMs?: number; requestTimeoutMs?: number };
}

export interface PlanRouteInput {
  request: ChatCompletionRequest;
}

export interface CallProviderInput {
  requestId: string;
  attempt: number;
  candidate: Candidate;
  request: ChatCompletionRequest;
}

export type CallProviderResult =
  | {
      outcome: 'succeeded';
      latencyMs: number;
      finishReason: FinishReason;
      usage: Usage;
      usageEstimated: boolean;
      /** Null when streamed: the text went to the client and the journal. */
      message: CompletionMessage | null;
    }
  | { outcome: 'skipped'; reason: string };

/** Failure details of a provider call (ApplicationFailure of type `ProviderError`). */
export interface ProviderFailureDetails {
  kind: string;
  status?: number;
  retryable: boolean;
  /** Part of the answer already reached the client: failing over would repeat or garble it. */
  contentSent: boolean;
  retryAfterSeconds?: number;
  latencyMs: number;
}

export function createCompletionActivities(dependencies: CompletionActivityDependencies) {
  const { catalogue, breaker, hub, journal } = dependencies;
  const adapters = new Map<string, ProviderAdapter>();
  let rotation = 0;

  const adapterFor = (endpoint: ProviderEndpoint) => {
    let adapter = adapters.get(endpoint.provider);
    if (!adapter) {
      adapter = createProviderAdapter({ ...endpoint, ...dependencies.providerTimeouts });
      adapters.set(endpoint.provider, adapter);
    }
    return adapter;
  };

  return {
    /** Plans which models to try, in order, from the catalogue and the shared breaker state. */
    async planRoute(input: PlanRouteInput): Promise<{ candidates: Candidate[] }> {
      const { request } = input;
      const resolved = request.model === 'auto' ? null : resolveModel(catalogue.catalogue, request.model);
      if (request.model !== 'auto' && !resolved) {
        throw ApplicationFailure.nonRetryable(`The model '${request.model}' does not exist`, 'model_not_found');
      }
      const views = await breaker.views();
      const now = Date.now();
      const candidates = planCandidates({
        catalogue: catalogue.catalogue,
        target: resolved ? { resolved } : chooseAutoTier(catalogue.catalogue, request),
        needsTools: !!request.tools?.length && request.tool_choice !== 'none',
        needsJson: request.response_format?.type === 'json_object' || request.response_format?.type === 'json_schema',
        admission: (provider) => breaker.admission(views.get(provider), now),
        rotation: rotation++,
      });
      return { candidates };
    },

    /** Calls one candidate; streams through the in-process hub and the journal when the request streams. */
    async callProvider(input: CallProviderInput): Promise<CallProviderResult> {
      const { candidate, request, requestId } = input;
      const endpoint = catalogue.endpoints.get(candidate.provider);
      if (!endpoint) return { outcome: 'skipped', reason: `provider ${candidate.provider} has no key` };
      if (candidate.probe && !(await breaker.claimProbe(candidate.provider))) {
        return { outcome: 'skipped', reason: 'circuit open; another replica holds the half-open probe' };
      }
      const adapter = adapterFor(endpoint);
      const providerRequest = toProviderRequest(candidate, request);
      const signal = Context.current().cancellationSignal;
      const startedAt = performance.now();
      const promptChars = request.messages.reduce((total, message) => total + (message.content?.length ?? 0), 0);
      let contentSent = false;
      try {
        if (!request.stream) {
          const response = await adapter.generate(providerRequest, { signal });
          await breaker.recordSuccess(candidate.provider);
          const completionChars = (response.content?.length ?? 0) + argumentsLength(response.toolCalls);
          return {
            outcome: 'succeeded',
            latencyMs: Math.round(performance.now() - startedAt),
            finishReason: response.finishReason,
            usage: response.usage ?? estimateUsage(promptChars, completionChars),
            usageEstimated: !response.usage,
            message: { content: response.content, toolCalls: response.toolCalls },
          };
        }

        const writer = journal.writer(requestId);
        let seq = 0;
        const emit = (event: StreamEvent) => {
          const sequenced = { seq: seq++, event };
          hub.publish(requestId, sequenced);
          writer.append(sequenced);
        };
        let finishReason: FinishReason = 'stop';
        let usage: Usage | null = null;
        let completionChars = 0;
        try {
          for await (const part of adapter.stream(providerRequest, { signal })) {
            if (part.type === 'usage') {
              usage = part.usage;
              continue;
            }
            if (part.type === 'finish') finishReason = part.reason;
            if (part.type === 'text-delta') completionChars += part.text.length;
            if (part.type === 'tool-call-delta') completionChars += part.argumentsDelta.length;
            if (!contentSent) {
              // Announced with the first content, so a failure before it fails over silently.
              emit({ type: 'model', model: candidate.model });
              contentSent = true;
            }
            emit(part);
          }
          const finalUsage = usage ?? estimateUsage(promptChars, completionChars);
          emit({ type: 'usage', usage: finalUsage });
          await breaker.recordSuccess(candidate.provider);
          return {
            outcome: 'succeeded',
            latencyMs: Math.round(performance.now() - startedAt),
            finishReason,
            usage: finalUsage,
            usageEstimated: !usage,
            message: null,
          };
        } catch (error) {
          if (contentSent) {
            const message = error instanceof Error ? error.message : String(error);
            emit({
              type: 'error',
              errorType: 'upstream_error',
              message: `${candidate.provider}: stream interrupted: ${message}`,
            });
          }
          throw error;
        } finally {
          await writer.close();
        }
      } catch (error) {
        const latencyMs = Math.round(performance.now() - startedAt);
        const providerError =
          error instanceof ProviderError
            ? error
            : new ProviderError({ provider: candidate.provider, kind: 'network', message: String(error) });
        if (providerError.retryable) await breaker.recordFailure(candidate.provider, providerError.message);
        else if (candidate.probe) await breaker.recordSuccess(candidate.provider);
        const details: ProviderFailureDetails = {
          kind: providerError.kind,
          status: providerError.status,
          retryable: providerError.retryable,
          contentSent,
          retryAfterSeconds: providerError.retryAfterSeconds,
          latencyMs,
        };
        throw ApplicationFailure.create({
          type: 'ProviderError',
          message: `${candidate.provider} (${candidate.model}): ${providerError.message}`,
          nonRetryable: true,
          details: [details],
        });
      }
    },
  };
}

export type CompletionActivities = ReturnType<typeof createCompletionActivities>;

function toProviderRequest(candidate: Candidate, request: ChatCompletionRequest): ProviderRequest {
  return {
    model: candidate.upstreamModel,
    messages: request.messages,
    tools: request.tools ?? undefined,
    toolChoice: request.tool_choice ?? undefined,
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    temperature: request.temperature ?? undefined,
    topP: request.top_p ?? undefined,
    stop: typeof request.stop === 'string' ? [request.stop] : (request.stop ?? undefined),
    seed: request.seed ?? undefined,
    user: request.user ?? undefined,
    responseFormat: request.response_format ?? undefined,
    presencePenalty: request.presence_penalty ?? undefined,
    frequencyPenalty: request.frequency_penalty ?? undefined,
    parallelToolCalls: request.parallel_tool_calls ?? undefined,
  };
}

function argumentsLength(toolCalls: ToolCall[]): number {
  return toolCalls.reduce((total, call) => total + call.function.name.length + call.function.arguments.length, 0);
}

/** Rough usage (4 characters a token) when a provider reports none; the billing issue brings a tokenizer. */
function estimateUsage(promptChars: number, completionChars: number): Usage {
  const prompt = Math.ceil(promptChars / 4);
  const completion = Math.ceil(completionChars / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
