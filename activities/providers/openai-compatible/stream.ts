/** Translates Chat Completions stream chunks into stream parts. */
import type { EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import type { Usage } from '../../../common/chat.ts';
import type { StreamPart } from '../../../common/stream-parts.ts';
import { malformed, parseJsonPayload } from '../http.ts';
import { closingParts, isJsonObject, type StreamTranslator } from '../stream-translation.ts';
import { ProviderError } from '../types.ts';
import { fallbackToolCallId, fromOpenAIUsage, mapOpenAIFinishReason, openAIUsageSchema } from './response.ts';

const openAIChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            // DeepSeek's reasoning models stream their reasoning here before any content.
            reasoning_content: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().nonnegative().nullish(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: openAIUsageSchema.nullish(),
  // OpenAI and vLLM report a failure that happens mid-stream as a chunk with an error object.
  error: z.object({ message: z.string().nullish(), code: z.union([z.string(), z.number()]).nullish() }).nullish(),
});

/**
 * Holds what a Chat Completions stream has said so far; finish and usage go out together at `[DONE]`. Reasoning
 * arrives as DeepSeek's `delta.reasoning_content`; OpenAI itself streams none in Chat Completions (reasoning
 * summaries are a Responses API feature), so its reasoning models yield text only.
 *
 * The grammar: chunks of deltas; a tool call's first delta names it (id and name), later ones add argument text; a
 * `finish_reason` on the choice's last chunk; a usage chunk with no choices; `[DONE]`. What it forbids is malformed:
 * a tool call that starts without a name, content after the choice's finish reason, a tool call whose arguments are
 * not a JSON object when the stream finishes, and any event after `[DONE]`. A call with no argument text at all (a
 * tool without parameters, from some servers) closes as `{}`.
 */
export class OpenAIStreamTranslator implements StreamTranslator {
  complete = false;
  private readonly provider: string;
  private readonly startedToolCalls = new Set<number>();
  private readonly toolArguments = new Map<number, string>();
  private rawFinishReason: string | null | undefined;
  private usage: Usage | null = null;

  constructor(provider: string) {
    this.provider = provider;
  }

  translate(event: EventSourceMessage): StreamPart[] {
    if (event.data.trim() === '[DONE]') {
      this.complete = true;
      return this.closing();
    }
    const chunk = parseJsonPayload(this.provider, event.data, openAIChunkSchema, 'stream chunk');
    if (chunk.error != null) {
      const status = typeof chunk.error.code === 'number' ? chunk.error.code : undefined;
      throw new ProviderError({
        provider: this.provider,
        kind: 'http',
        status,
        message: `${this.provider}: error in stream: ${chunk.error.message ?? 'unknown error'}`,
      });
    }
    // The final chunk requested by stream_options carries usage and an empty choices array.
    if (chunk.usage != null) this.usage = fromOpenAIUsage(chunk.usage);
    const parts: StreamPart[] = [];
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      const carries = !!(delta?.content || delta?.reasoning_content || delta?.tool_calls?.length);
      if (this.rawFinishReason != null && carries) throw malformed(this.provider, 'content after the finish reason');
      if (choice.finish_reason != null) this.rawFinishReason = choice.finish_reason;
      const reasoning = choice.delta?.reasoning_content;
      if (reasoning != null && reasoning !== '') parts.push({ type: 'reasoning-delta', text: reasoning });
      const content = choice.delta?.content;
      if (content != null && content !== '') parts.push({ type: 'text-delta', text: content });
      for (const [position, call] of (choice.delta?.tool_calls ?? []).entries()) {
        parts.push(this.toolCallPart(call.index ?? position, call.id, call.function?.name, call.function?.arguments));
      }
    }
    return parts;
  }

  end(): StreamPart[] {
    // A few self-hosted servers end the body without `[DONE]`; a finish reason proves the answer is whole.
    if (this.rawFinishReason === undefined) throw malformed(this.provider, 'stream ended before a finish reason');
    return this.closing();
  }

  afterComplete(): void {
    throw malformed(this.provider, 'an event after [DONE]');
  }

  private toolCallPart(
    index: number,
    id: string | null | undefined,
    name: string | null | undefined,
    argumentsDelta: string | null | undefined,
  ): StreamPart {
    this.toolArguments.set(index, (this.toolArguments.get(index) ?? '') + (argumentsDelta ?? ''));
    if (this.startedToolCalls.has(index)) {
      return { type: 'tool-call-delta', index, argumentsDelta: argumentsDelta ?? '' };
    }
    if (!name) throw malformed(this.provider, `tool call ${index} starts without a name`);
    this.startedToolCalls.add(index);
    return {
      type: 'tool-call-delta',
      index,
      id: id ?? fallbackToolCallId(index),
      name: name ?? '',
      argumentsDelta: argumentsDelta ?? '',
    };
  }

  private closing(): StreamPart[] {
    const raw = this.rawFinishReason ?? null;
    const closed: StreamPart[] = [];
    for (const [index, text] of this.toolArguments) {
      if (text === '') closed.push({ type: 'tool-call-delta', index, argumentsDelta: '{}' });
      else if (!isJsonObject(text)) {
        throw malformed(this.provider, `tool call ${index} finished with arguments that are not a JSON object`);
      }
    }
    return [...closed, ...closingParts(mapOpenAIFinishReason(raw, this.startedToolCalls.size > 0), raw, this.usage)];
  }
}
