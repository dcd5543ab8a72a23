/**
 * Token counts for reservations and for usage a provider did not report. One tokenizer (o200k, via
 * gpt-tokenizer) stands in for every provider's: close enough to bound a reservation and to bill an
 * estimate, and entries billed this way are marked estimated in the ledger.
 */
import { encode } from 'gpt-tokenizer';
import {
  contentImages,
  contentText,
  type ChatCompletionRequest,
  type ChatMessage,
  type ToolCall,
} from '../../common/chat.ts';
import { creditsFor } from '../../common/credits.ts';

/** Tokens of a text. */
export function countTokens(text: string): number {
  return text ? encode(text).length : 0;
}

/**
 * What an image counts for: a flat 765 tokens, OpenAI's estimate for a high-detail 1024×1024 image (85 base tokens
 * plus 170 for each of four 512-pixel tiles). Images are not decoded to measure them: the count bounds a
 * reservation and bills an estimate only, and 765 is the usual size of a photo after the provider scales it.
 */
export const tokensPerImage = 765;

/** Prompt tokens of a conversation: contents, images, tool calls, and a few tokens of framing per message. */
export function countPromptTokens(messages: ChatMessage[]): number {
  let total = 3;
  for (const message of messages) {
    total += 4 + countTokens(contentText(message.content));
    if (message.role === 'user') total += contentImages(message.content).length * tokensPerImage;
    if (message.role === 'assistant') total += countToolCallTokens(message.tool_calls ?? []);
  }
  return total;
}

export function countToolCallTokens(toolCalls: ToolCall[]): number {
  return toolCalls.reduce(
    (sum, call) => sum + countTokens(call.function.name) + countTokens(call.function.arguments),
    0,
  );
}

/** The most an attempt can cost: its prompt plus every token it may generate (default 4,096), at its rate. */
export function worstCaseCredits(
  request: ChatCompletionRequest,
  rate: number,
  promptTokens = countPromptTokens(request.messages),
): number {
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens;
  return creditsFor(promptTokens + maxTokens, rate);
}

/** The spec publishes 4,096 as a default `max_tokens`; it bounds reservations when the caller sets none. */
export const defaultMaxTokens = 4096;
