/** The Chat Completions response: a minimal schema (unknown additions pass) and its mapping. */
import { z } from 'zod';
import type { FinishReason, ToolCall, Usage } from '../../../common/chat.ts';
import { toUsage } from '../stream-translation.ts';
import type { ProviderResponse } from '../types.ts';

export const openAIUsageSchema = z.object({
  prompt_tokens: z.number().nullish(),
  completion_tokens: z.number().nullish(),
  total_tokens: z.number().nullish(),
});

export const openAIChatResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                function: z.object({ name: z.string(), arguments: z.string().nullish() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: openAIUsageSchema.nullish(),
});

type OpenAIChatResponse = z.infer<typeof openAIChatResponseSchema>;

/**
 * Maps the first choice of a Chat Completions response. Reasoning comes from DeepSeek's `reasoning_content`
 * (also used by vLLM and others); OpenAI's own Chat Completions never returns reasoning text, its summaries exist
 * only in the Responses API, which this adapter does not speak.
 */
export function fromOpenAIChatResponse(response: OpenAIChatResponse): ProviderResponse {
  // The schema requires at least one choice.
  const choice = response.choices[0]!;
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((call, index) => ({
    id: call.id ?? fallbackToolCallId(index),
    type: 'function',
    function: { name: call.function.name, arguments: call.function.arguments ?? '' },
  }));
  return {
    // A structured-output refusal arrives in `refusal` with null content; the caller should still see it.
    content: choice.message.content ?? choice.message.refusal ?? null,
    ...(choice.message.reasoning_content ? { reasoning: choice.message.reasoning_content } : {}),
    toolCalls,
    finishReason: mapOpenAIFinishReason(choice.finish_reason, toolCalls.length > 0),
    usage: fromOpenAIUsage(response.usage),
  };
}

/** Maps a raw finish reason; servers that send none or their own words fall back on what was produced. */
export function mapOpenAIFinishReason(raw: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (raw) {
    case 'stop':
      // Some compatible servers (older Ollama, llama.cpp) say `stop` after a tool call.
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'length':
      return 'length';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

/** Usage from a response or chunk; null when the server sent none. */
export function fromOpenAIUsage(usage: z.infer<typeof openAIUsageSchema> | null | undefined): Usage | null {
  if (usage == null) return null;
  return toUsage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens);
}

/** Some self-hosted servers omit tool-call ids; the caller needs one to answer the call. */
export function fallbackToolCallId(index: number): string {
  return `call_${index}`;
}
