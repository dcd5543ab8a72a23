/** The Anthropic Messages response: a minimal schema (unknown additions pass) and its mapping. */
import { z } from 'zod';
import type { FinishReason, ToolCall, Usage } from '../../../common/chat.ts';
import { toUsage } from '../stream-translation.ts';
import type { ProviderResponse } from '../types.ts';

export const anthropicUsageSchema = z.object({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  cache_creation_input_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
});

/** A content block of a message, whole or as a stream's block start announces it (the fields this adapter reads). */
export const anthropicContentBlockSchema = z.object({
  type: z.string(),
  text: z.string().nullish(),
  thinking: z.string().nullish(),
  id: z.string().nullish(),
  name: z.string().nullish(),
  input: z.unknown().optional(),
});

export const anthropicMessageSchema = z.object({
  // Blocks of other types (redacted_thinking, server tools) pass validation and are skipped when mapping.
  content: z.array(anthropicContentBlockSchema),
  stop_reason: z.string().nullish(),
  stop_sequence: z.string().nullish(),
  usage: anthropicUsageSchema.nullish(),
});

type AnthropicMessage = z.infer<typeof anthropicMessageSchema>;

/**
 * Maps a Messages response: text blocks joined into content, thinking blocks into reasoning (their signatures
 * are dropped: nothing sends them back), tool_use blocks into tool calls. A redacted_thinking block holds only
 * encrypted data and adds no reasoning text.
 */
export function fromAnthropicMessage(message: AnthropicMessage): ProviderResponse {
  const texts: string[] = [];
  const thoughts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text' && block.text != null) texts.push(block.text);
    if (block.type === 'thinking' && block.thinking != null && block.thinking !== '') thoughts.push(block.thinking);
    if (block.type === 'tool_use' && block.id != null && block.name != null) {
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  return {
    content: texts.length > 0 ? texts.join('') : null,
    ...(thoughts.length > 0 ? { reasoning: thoughts.join('\n\n') } : {}),
    toolCalls,
    finishReason: mapAnthropicStopReason(message.stop_reason),
    ...(message.stop_reason === 'stop_sequence' && message.stop_sequence
      ? { stopSequence: message.stop_sequence }
      : {}),
    usage: fromAnthropicUsage(message.usage),
  };
}

/** Maps Anthropic's stop_reason onto the OpenAI finish reasons. */
export function mapAnthropicStopReason(raw: string | null | undefined): FinishReason {
  switch (raw) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn.
      return 'stop';
  }
}

/** Anthropic's input_tokens excludes cached prompt tokens, which the OpenAI prompt count includes. */
export function fromAnthropicUsage(usage: z.infer<typeof anthropicUsageSchema> | null | undefined): Usage | null {
  if (usage == null || (usage.input_tokens == null && usage.output_tokens == null)) return null;
  const prompt =
    (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
  return toUsage(prompt, usage.output_tokens);
}
