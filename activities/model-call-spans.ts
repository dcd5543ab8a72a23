/**
 * A span per provider call (one attempt of one model call), in the OpenTelemetry GenAI semantic conventions
 * (`gen_ai.*`) with the platform's own attributes (`tessera.*`); made only when tracing is on (process/tracing.ts).
 * The prompt and the answer are recorded only when the operator opts in (OTEL_GENAI_CAPTURE_CONTENT=true).
 *
 * The span's parent is what is active where the call starts: the local activity's span when the workflow makes the
 * call, the API request's span for attempt 1 when the API starts it alongside the workflow (the activity adopts it).
 */
import { context, propagation, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { creditsFor } from '../common/credits.ts';
import type { Tracing } from '../process/tracing.ts';
import type { ProviderCallInput, ProviderCallOutcome } from './provider-calls.ts';

/** Baggage the API puts on a request's context once it knows the caller (api/tracing.ts). */
export const accountBaggage = 'tessera.account';
export const keyIdBaggage = 'tessera.key_id';

/** `gen_ai.provider.name` of each catalogue provider: the conventions' well-known values, else the catalogue id. */
const providerNames: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  deepseek: 'deepseek',
  groq: 'groq',
  alibaba: 'alibaba_cloud',
};

export type ModelCallTracing = Pick<Tracing, 'tracer' | 'captureContent'>;

export interface ModelCallSpan {
  end(outcome: ProviderCallOutcome): void;
  /** The call threw instead of returning an outcome (its database writes failed). */
  fail(error: unknown): void;
}

export function startModelCallSpan(tracing: ModelCallTracing, input: ProviderCallInput): ModelCallSpan {
  const { candidate, request } = input;
  const active = context.active();
  const baggage = propagation.getBaggage(active);
  const account = input.userId ?? baggage?.getEntry(accountBaggage)?.value;
  const keyId = baggage?.getEntry(keyIdBaggage)?.value;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': providerNames[candidate.provider] ?? candidate.provider,
    'gen_ai.request.model': candidate.upstreamModel,
    'tessera.provider': candidate.provider,
    'tessera.model': candidate.model,
    'tessera.request_id': input.requestId,
    'tessera.attempt': input.attempt,
    'tessera.failover': !!input.failover,
    'tessera.stream': !!request.stream,
    'tessera.metered': !!input.metered,
  };
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) attributes['gen_ai.request.max_tokens'] = maxTokens;
  if (request.temperature != null) attributes['gen_ai.request.temperature'] = request.temperature;
  if (request.top_p != null) attributes['gen_ai.request.top_p'] = request.top_p;
  if (input.workflowId) attributes['tessera.workflow_id'] = input.workflowId;
  if (candidate.probe) attributes['tessera.probe'] = true;
  if (account) attributes['tessera.account'] = account;
  if (keyId) attributes['tessera.key_id'] = keyId;
  if (tracing.captureContent) attributes['gen_ai.input.messages'] = JSON.stringify(request.messages);
  const span = tracing.tracer.startSpan(
    `chat ${candidate.upstreamModel}`,
    { kind: SpanKind.CLIENT, attributes },
    active,
  );
  return {
    end: (outcome) => endModelCallSpan(span, tracing, input, outcome),
    fail: (error) => {
      span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
    },
  };
}

function endModelCallSpan(
  span: Span,
  tracing: ModelCallTracing,
  input: ProviderCallInput,
  outcome: ProviderCallOutcome,
): void {
  span.setAttribute('tessera.outcome', outcome.outcome);
  if (outcome.ledgerDone !== undefined) span.setAttribute('tessera.ledger_done', outcome.ledgerDone);
  if (outcome.outcome === 'succeeded') {
    const { usage } = outcome;
    const { candidate } = input;
    span.setAttributes({
      'gen_ai.response.model': candidate.upstreamModel,
      'gen_ai.response.finish_reasons': [outcome.finishReason],
      'gen_ai.usage.input_tokens': usage.prompt_tokens,
      'gen_ai.usage.output_tokens': usage.completion_tokens,
      'tessera.usage_estimated': outcome.usageEstimated,
      'tessera.latency_ms': outcome.latencyMs,
    });
    if (input.metered && input.userId && candidate.creditRate !== undefined) {
      span.setAttribute('tessera.credits', creditsFor(usage.total_tokens, candidate.creditRate));
    }
    if (outcome.stopped) span.setAttribute('tessera.stopped', true);
    if (tracing.captureContent && outcome.message) {
      span.setAttribute(
        'gen_ai.output.messages',
        JSON.stringify([
          {
            role: 'assistant',
            content: outcome.message.content,
            ...(outcome.message.toolCalls.length ? { tool_calls: outcome.message.toolCalls } : {}),
            finish_reason: outcome.finishReason,
          },
        ]),
      );
    }
  } else if (outcome.outcome === 'failed') {
    const { error } = outcome;
    span.setAttributes({
      'error.type': error.kind,
      'tessera.retryable': error.retryable,
      'tessera.content_sent': outcome.contentSent,
      'tessera.latency_ms': outcome.latencyMs,
    });
    if (error.status !== undefined) span.setAttribute('tessera.upstream_status', error.status);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  } else {
    span.setAttribute('tessera.skip_reason', outcome.reason);
    if (outcome.insufficientCredits) span.setAttribute('tessera.insufficient_credits', true);
  }
  span.end();
}
