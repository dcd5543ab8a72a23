/** Translates Anthropic Messages stream events into stream parts. */
import type { EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import type { StreamPart } from '../../../common/stream-parts.ts';
import { malformed, parseJsonPayload } from '../http.ts';
import { closingParts, isJsonObject, type StreamTranslator } from '../stream-translation.ts';
import { ProviderError } from '../types.ts';
import {
  anthropicContentBlockSchema,
  anthropicMessageSchema,
  anthropicUsageSchema,
  fromAnthropicUsage,
  mapAnthropicStopReason,
} from './response.ts';

/** One loose shape for every event type: each event reads the few fields it needs. */
const anthropicEventSchema = z.object({
  type: z.string(),
  index: z.number().int().nonnegative().nullish(),
  // The grammar lets the first event carry content and a stop reason already (a whole short answer at once).
  message: anthropicMessageSchema.partial().nullish(),
  content_block: anthropicContentBlockSchema.nullish(),
  delta: z
    .object({
      type: z.string().nullish(),
      text: z.string().nullish(),
      thinking: z.string().nullish(),
      partial_json: z.string().nullish(),
      stop_reason: z.string().nullish(),
      stop_sequence: z.string().nullish(),
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
 *
 * The grammar (docs.claude.com, "Streaming Messages"): one `message_start` (whose message may already carry content
 * blocks and a stop reason: read as content), then content blocks one at a time, each `content_block_start`, its
 * deltas of its own kind and `content_block_stop`, then `message_delta` and `message_stop`; `ping` anywhere, and
 * `error`. What it forbids is malformed: any content before `message_start` or a second one, a block started while
 * another is open or with an index used before, a delta or stop for a block that is not the open one, a delta of
 * another kind than its block, a tool_use block whose input is not a JSON object when it stops, the message ending with
 * a block open, and anything but `ping` after `message_stop`.
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
  private stopSequence: string | null = null;
  private usage: AnthropicUsage = {};
  private started = false;
  /** The open content block: its index and type; the indexes used so far; each tool block's input so far. */
  private open: { index: number; type: string } | null = null;
  private readonly usedBlocks = new Set<number>();
  private readonly toolInput = new Map<number, string>();

  constructor(provider: string) {
    this.provider = provider;
  }

  translate(event: EventSourceMessage): StreamPart[] {
    const data = parseJsonPayload(this.provider, event.data, anthropicEventSchema, 'stream event');
    if (data.type === 'ping' || data.type === 'error') {
      if (data.type === 'error') throw this.streamError(data.error);
      return [];
    }
    const known = ['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'];
    if (!this.started && data.type !== 'message_start' && known.includes(data.type)) {
      throw malformed(this.provider, `${data.type} before message_start`);
    }
    switch (data.type) {
      case 'message_start':
        if (this.started) throw malformed(this.provider, 'a second message_start');
        this.started = true;
        this.mergeUsage(data.message?.usage);
        if (data.message?.stop_reason != null) this.rawStopReason = data.message.stop_reason;
        return this.firstContent(data.message?.content ?? []);
      case 'content_block_start':
        return this.blockStart(data.index ?? 0, data.content_block);
      case 'content_block_delta':
        return this.blockDelta(data.index ?? 0, data.delta);
      case 'content_block_stop':
        return this.blockStop(data.index ?? 0);
      case 'message_delta':
        if (this.open) throw malformed(this.provider, `message_delta while content block ${this.open.index} is open`);
        if (data.delta?.stop_reason != null) this.rawStopReason = data.delta.stop_reason;
        if (data.delta?.stop_sequence != null) this.stopSequence = data.delta.stop_sequence;
        this.mergeUsage(data.usage);
        return [];
      case 'message_stop':
        if (this.open) throw malformed(this.provider, `message_stop while content block ${this.open.index} is open`);
        this.complete = true;
        return closingParts(
          mapAnthropicStopReason(this.rawStopReason),
          this.rawStopReason,
          fromAnthropicUsage(this.usage),
          this.rawStopReason === 'stop_sequence' ? this.stopSequence : null,
        );
      default:
        // Event types added after this adapter was written (Anthropic's versioning policy allows them).
        return [];
    }
  }

  end(): StreamPart[] {
    throw malformed(this.provider, 'stream ended before message_stop');
  }

  afterComplete(event: EventSourceMessage): void {
    const type = event.event ?? (JSON.parse(event.data) as { type?: string }).type;
    if (type !== 'ping') throw malformed(this.provider, `${type ?? 'an event'} after message_stop`);
  }

  /** Content blocks the first event carries, whole: they take the first indexes. */
  private firstContent(blocks: NonNullable<NonNullable<z.infer<typeof anthropicEventSchema>['message']>['content']>) {
    return blocks.flatMap((block, blockIndex) => {
      this.usedBlocks.add(blockIndex);
      if (block.type === 'text') return block.text ? [{ type: 'text-delta' as const, text: block.text }] : [];
      if (block.type === 'thinking') {
        this.thinkingBlocks++;
        return this.reasoning(block.thinking);
      }
      if (block.type !== 'tool_use') return [];
      const input = block.input ?? {};
      if (input === null || typeof input !== 'object' || Array.isArray(input)) {
        throw malformed(this.provider, `tool_use block ${blockIndex} with an input that is not a JSON object`);
      }
      const index = this.toolIndexByBlock.size;
      this.toolIndexByBlock.set(blockIndex, index);
      this.toolCallsWithArguments.add(index);
      return [
        {
          type: 'tool-call-delta' as const,
          index,
          id: block.id ?? `toolu_${index}`,
          name: block.name ?? '',
          argumentsDelta: JSON.stringify(input),
        },
      ];
    });
  }

  private blockStart(blockIndex: number, block: z.infer<typeof anthropicEventSchema>['content_block']): StreamPart[] {
    if (this.open) {
      throw malformed(this.provider, `content block ${blockIndex} started while block ${this.open.index} is open`);
    }
    if (this.usedBlocks.has(blockIndex)) throw malformed(this.provider, `content block ${blockIndex} started twice`);
    this.usedBlocks.add(blockIndex);
    this.open = { index: blockIndex, type: block?.type ?? 'unknown' };
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
    this.toolInput.set(blockIndex, '');
    return [
      { type: 'tool-call-delta', index, id: block.id ?? `toolu_${index}`, name: block.name ?? '', argumentsDelta: '' },
    ];
  }

  private blockDelta(blockIndex: number, delta: z.infer<typeof anthropicEventSchema>['delta']): StreamPart[] {
    if (this.open?.index !== blockIndex)
      throw malformed(this.provider, `a delta for content block ${blockIndex}, not open`);
    const allowed = deltaKinds[this.open.type];
    if (allowed && !allowed.includes(delta?.type ?? '')) {
      throw malformed(this.provider, `a ${delta?.type ?? 'untyped'} delta in a ${this.open.type} block`);
    }
    if (delta?.type === 'input_json_delta' && this.toolInput.has(blockIndex)) {
      this.toolInput.set(blockIndex, this.toolInput.get(blockIndex)! + (delta.partial_json ?? ''));
    }
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
    if (this.open?.index !== blockIndex)
      throw malformed(this.provider, `a stop for content block ${blockIndex}, not open`);
    this.open = null;
    const input = this.toolInput.get(blockIndex);
    if (input !== undefined && input !== '' && !isJsonObject(input)) {
      throw malformed(this.provider, `tool_use block ${blockIndex} closed with input that is not a JSON object`);
    }
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

/** The delta kinds each block type takes (types not listed, such as ones added later, take any). */
const deltaKinds: Record<string, string[]> = {
  text: ['text_delta', 'citations_delta'],
  thinking: ['thinking_delta', 'signature_delta'],
  redacted_thinking: [],
  tool_use: ['input_json_delta'],
};
