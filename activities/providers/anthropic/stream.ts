/** Translates Anthropic Messages stream events into stream parts. */
import type { EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import type { StreamPart } from '../../../common/stream-parts.ts';
import { malformed, parseJsonPayload } from '../http.ts';
import { closingParts, type StreamTranslator } from '../stream-translation.ts';
import { ProviderError } from '../types.ts';
import { anthropicUsageSchema, fromAnthropicUsage, mapAnthropicStopReason } from './response.ts';

/** One loose shape for every event type: each event reads the few fields it needs. */
const anthropicEventSchema = z.object({
  type: z.string(),
  index: z.number().int().nonnegative().nullish(),
  message: z.object({ usage: anthropicUsageSchema.nullish() }).nullish(),
  content_block: z
    .object({
      type: z.string(),
      text: z.string().nullish(),
      thinking: z.string().nullish(),
      id: z.string().nullish(),
      name: z.string().nullish(),
    })
    .nullish(),
  delta: z
    .object({
      type: z.string().nullish(),
      text: z.string().nullish(),
      thinking: z.string().nullish(),
      partial_json: z.string().nullish(),
      stop_reason: z.string().nullish(),
    })
    .nullish(),
  usage: anthropicUsageSchema.nullish(),
  error: z.object({ type: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

type AnthropicUsage = z.infer<typeof anthropicUsageSchema>;

/** HTTP statuses Anthropic uses for the error types it can also send inside a stream. */
const statusByErrorType: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/**
 * Holds what a Messages stream has said so far; finish and usage go out together at `message_stop`. A thinking
 * block streams `thinking_delta`s as reasoning, then a `signature_delta` that is dropped (nothing sends it back);
 * a redacted_thinking block carries only encrypted data and yields nothing.
 */
export class AnthropicStreamTranslator implements StreamTranslator {
  complete = false;
  private readonly provider: string;
  /** Thinking blocks started, and the one whose text went out last: a later block's text is set apart. */
  private thinkingBlocks = 0;
  private reasonedBlock = 0;
  /** Content-block index → tool-call index: tool calls count only tool_use blocks, from 0. */
  private readonly toolIndexByBlock = new Map<number, number>();
  private readonly toolCallsWithArguments = new Set<number>();
  private rawStopReason: string | null = null;
  private usage: AnthropicUsage = {};

  constructor(provider: string) {
    this.provider = provider;
  }

  translate(event: EventSourceMessage): StreamPart[] {
    const data = parseJsonPayload(this.provider, event.data, anthropicEventSchema, 'stream event');
    switch (data.type) {
      case 'message_start':
        this.mergeUsage(data.message?.usage);
        return [];
      case 'content_block_start':
        return this.blockStart(data.index ?? 0, data.content_block);
      case 'content_block_delta':
        return this.blockDelta(data.index ?? 0, data.delta);
      case 'content_block_stop':
        return this.blockStop(data.index ?? 0);
      case 'message_delta':
        if (data.delta?.stop_reason != null) this.rawStopReason = data.delta.stop_reason;
        this.mergeUsage(data.usage);
        return [];
      case 'message_stop':
        this.complete = true;
        return closingParts(
          mapAnthropicStopReason(this.rawStopReason),
          this.rawStopReason,
          fromAnthropicUsage(this.usage),
        );
      case 'error':
        throw this.streamError(data.error);
      default:
        // ping, and event types added after this adapter was written (Anthropic's versioning policy allows them).
        return [];
    }
  }

  end(): StreamPart[] {
    throw malformed(this.provider, 'stream ended before message_stop');
  }

  private blockStart(blockIndex: number, block: z.infer<typeof anthropicEventSchema>['content_block']): StreamPart[] {
    if (block?.type === 'text' && block.text != null && block.text !== '') {
      return [{ type: 'text-delta', text: block.text }];
    }
    if (block?.type === 'thinking') {
      this.thinkingBlocks++;
      return this.reasoning(block.thinking);
    }
    if (block?.type !== 'tool_use') return [];
    const index = this.toolIndexByBlock.size;
    this.toolIndexByBlock.set(blockIndex, index);
    return [
      { type: 'tool-call-delta', index, id: block.id ?? `toolu_${index}`, name: block.name ?? '', argumentsDelta: '' },
    ];
  }

  private blockDelta(blockIndex: number, delta: z.infer<typeof anthropicEventSchema>['delta']): StreamPart[] {
    if (delta?.type === 'text_delta' && delta.text != null && delta.text !== '') {
      return [{ type: 'text-delta', text: delta.text }];
    }
    if (delta?.type === 'thinking_delta') return this.reasoning(delta.thinking);
    const index = this.toolIndexByBlock.get(blockIndex);
    if (delta?.type !== 'input_json_delta' || index === undefined || delta.partial_json == null) return [];
    if (delta.partial_json === '') return [];
    this.toolCallsWithArguments.add(index);
    return [{ type: 'tool-call-delta', index, argumentsDelta: delta.partial_json }];
  }

  /** Reasoning text; a new thinking block's is set apart from the last one's, as the non-streaming mapping does. */
  private reasoning(text: string | null | undefined): StreamPart[] {
    if (text == null || text === '') return [];
    const separator = this.reasonedBlock > 0 && this.reasonedBlock < this.thinkingBlocks ? '\n\n' : '';
    this.reasonedBlock = this.thinkingBlocks;
    return [{ type: 'reasoning-delta', text: separator + text }];
  }

  /** A tool without parameters streams no input JSON; its arguments are `{}` as in the non-streaming body. */
  private blockStop(blockIndex: number): StreamPart[] {
    const index = this.toolIndexByBlock.get(blockIndex);
    if (index === undefined || this.toolCallsWithArguments.has(index)) return [];
    return [{ type: 'tool-call-delta', index, argumentsDelta: '{}' }];
  }

  /** message_start carries the input count, message_delta the running output count; later values win. */
  private mergeUsage(usage: AnthropicUsage | null | undefined): void {
    if (usage == null) return;
    this.usage = {
      input_tokens: usage.input_tokens ?? this.usage.input_tokens,
      output_tokens: usage.output_tokens ?? this.usage.output_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens ?? this.usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens ?? this.usage.cache_read_input_tokens,
    };
  }

  private streamError(error: z.infer<typeof anthropicEventSchema>['error']): ProviderError {
    const type = error?.type ?? 'unknown_error';
    return new ProviderError({
      provider: this.provider,
      kind: 'http',
      status: statusByErrorType[type],
      message: `${this.provider}: error in stream: ${type}: ${error?.message ?? 'no message'}`,
    });
  }
}
