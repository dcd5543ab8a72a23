/** The Gemini generateContent response: a minimal schema (unknown additions pass) and its mapping. */
import { z } from 'zod';
import type { FinishReason, ToolCall, Usage } from '../../../common/chat.ts';
import { toUsage } from '../stream-translation.ts';
import type { ProviderResponse } from '../types.ts';

const geminiPartSchema = z.object({
  text: z.string().nullish(),
  thought: z.boolean().nullish(),
  functionCall: z.object({ name: z.string(), args: z.record(z.string(), z.unknown()).nullish() }).nullish(),
});

export const geminiUsageSchema = z.object({
  promptTokenCount: z.number().nullish(),
  candidatesTokenCount: z.number().nullish(),
  thoughtsTokenCount: z.number().nullish(),
});

export const geminiResponseSchema = z.object({
  candidates: z
    .array(
      z.object({
        content: z.object({ parts: z.array(geminiPartSchema).nullish() }).nullish(),
        finishReason: z.string().nullish(),
      }),
    )
    .nullish(),
  usageMetadata: geminiUsageSchema.nullish(),
  promptFeedback: z.object({ blockReason: z.string().nullish() }).nullish(),
});

export type GeminiResponse = z.infer<typeof geminiResponseSchema>;
type GeminiPart = z.infer<typeof geminiPartSchema>;

/** Maps the first candidate; a prompt blocked before any candidate becomes an empty content_filter answer. */
export function fromGeminiResponse(response: GeminiResponse): ProviderResponse {
  const parts = answerParts(response);
  const toolCalls = parts
    .flatMap((part) => (part.functionCall == null ? [] : [part.functionCall]))
    .map((call, index): ToolCall => ({
      id: geminiToolCallId(index),
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
    }));
  const text = parts.map((part) => part.text ?? '').join('');
  const reasoning = thoughtParts(response)
    .map((part) => part.text ?? '')
    .join('');
  return {
    content: text === '' ? null : text,
    ...(reasoning === '' ? {} : { reasoning }),
    toolCalls,
    finishReason: finishReasonOf(response, toolCalls.length > 0),
    usage: fromGeminiUsage(response.usageMetadata),
  };
}

/** The parts of the first candidate that belong to the answer (thought summaries do not). */
export function answerParts(response: GeminiResponse): GeminiPart[] {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  return parts.filter((part) => part.thought !== true);
}

/** The first candidate's thought summaries (sent with `thinkingConfig.includeThoughts`): its reasoning. */
export function thoughtParts(response: GeminiResponse): GeminiPart[] {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  return parts.filter((part) => part.thought === true);
}

/** The candidate's finish reason, or the prompt's block reason when Gemini refused before answering. */
export function rawFinishReason(response: GeminiResponse): string | null {
  return response.candidates?.[0]?.finishReason ?? response.promptFeedback?.blockReason ?? null;
}

/** The unified finish reason; a prompt Gemini blocked has no candidate and always counts as filtered. */
export function finishReasonOf(response: GeminiResponse, hasToolCalls: boolean): FinishReason {
  const candidateReason = response.candidates?.[0]?.finishReason;
  if (candidateReason == null && response.promptFeedback?.blockReason != null) return 'content_filter';
  return mapGeminiFinishReason(candidateReason, hasToolCalls);
}

/** Gemini has no tool-call ids; these are stable within one response, which is all a caller needs. */
export function geminiToolCallId(index: number): string {
  return `call_${index}`;
}

/** Maps Gemini's finishReason (or a prompt blockReason) onto the OpenAI finish reasons. */
export function mapGeminiFinishReason(raw: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (raw) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      // STOP, and anything newer: the answer ended normally.
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

/** Thinking tokens are billed as output, so they count as completion tokens. */
export function fromGeminiUsage(usage: z.infer<typeof geminiUsageSchema> | null | undefined): Usage | null {
  if (usage == null || (usage.promptTokenCount == null && usage.candidatesTokenCount == null)) return null;
  const completion = (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0);
  return toUsage(usage.promptTokenCount, completion);
}
