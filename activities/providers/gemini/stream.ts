/** Translates Gemini's SSE stream (one partial GenerateContentResponse per event) into stream parts. */
import type { EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import type { Usage } from '../../../common/chat.ts';
import type { StreamPart } from '../../../common/stream-parts.ts';
import { malformed, parseJsonPayload } from '../http.ts';
import { closingParts, type StreamTranslator } from '../stream-translation.ts';
import { ProviderError } from '../types.ts';
import {
  answerParts,
  finishReasonOf,
  fromGeminiUsage,
  geminiResponseSchema,
  geminiToolCallId,
  rawFinishReason,
  thoughtParts,
  type GeminiResponse,
} from './response.ts';

const geminiChunkSchema = geminiResponseSchema.extend({
  // A failure after the stream started arrives as an event with Google's error object.
  error: z
    .object({ code: z.number().nullish(), message: z.string().nullish(), status: z.string().nullish() })
    .nullish(),
});

/**
 * Holds what a Gemini stream has said so far. Gemini sends no terminal event: the body's end closes the
 * answer, and a finish reason proves it was not cut short. Each function call comes whole in one part. What the
 * grammar forbids is malformed: content in a chunk after the one that carried the finish reason (a later chunk may
 * carry usage only).
 */
export class GeminiStreamTranslator implements StreamTranslator {
  readonly complete = false;
  private readonly provider: string;
  private toolCallCount = 0;
  private lastChunkWithReason: GeminiResponse | undefined;
  private usage: Usage | null = null;

  constructor(provider: string) {
    this.provider = provider;
  }

  translate(event: EventSourceMessage): StreamPart[] {
    const chunk = parseJsonPayload(this.provider, event.data, geminiChunkSchema, 'stream chunk');
    if (chunk.error != null) {
      throw new ProviderError({
        provider: this.provider,
        kind: 'http',
        status: chunk.error.code ?? undefined,
        message: `${this.provider}: error in stream: ${chunk.error.status ?? 'UNKNOWN'}: ${chunk.error.message ?? 'no message'}`,
      });
    }
    // Each chunk repeats the running usage; the last one holds the totals.
    this.usage = fromGeminiUsage(chunk.usageMetadata) ?? this.usage;
    const finished = this.lastChunkWithReason !== undefined;
    if (rawFinishReason(chunk) !== null) this.lastChunkWithReason = chunk;
    const parts: StreamPart[] = [];
    for (const part of thoughtParts(chunk)) {
      if (part.text != null && part.text !== '') parts.push({ type: 'reasoning-delta', text: part.text });
    }
    for (const part of answerParts(chunk)) {
      if (part.text != null && part.text !== '') parts.push({ type: 'text-delta', text: part.text });
      if (part.functionCall != null) {
        // Gemini sends each call whole, so its first part already carries the complete arguments.
        const index = this.toolCallCount++;
        parts.push({
          type: 'tool-call-delta',
          index,
          id: geminiToolCallId(index),
          name: part.functionCall.name,
          argumentsDelta: JSON.stringify(part.functionCall.args ?? {}),
        });
      }
    }
    if (finished && parts.length > 0) throw malformed(this.provider, 'content after the finish reason');
    return parts;
  }

  end(): StreamPart[] {
    const chunk = this.lastChunkWithReason;
    if (chunk === undefined) throw malformed(this.provider, 'stream ended before a finish reason');
    return closingParts(finishReasonOf(chunk, this.toolCallCount > 0), rawFinishReason(chunk), this.usage);
  }
}
