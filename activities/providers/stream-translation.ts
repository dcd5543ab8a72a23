/**
 * The loop shared by every adapter's `stream`: feed server-sent events to a protocol's translator and yield
 * the typed parts it produces, so adapters hold only the protocol knowledge.
 */
import type { EventSourceMessage } from 'eventsource-parser';
import type { FinishReason, Usage } from '../../common/chat.ts';
import type { StreamPart } from '../../common/stream-parts.ts';

/** Turns one protocol's server-sent events into stream parts. */
export interface StreamTranslator {
  /** The parts one event carries; throws a ProviderError for an error event or unparsable data. */
  translate(event: EventSourceMessage): StreamPart[];
  /** True once the protocol's terminal event arrived (OpenAI `[DONE]`, Anthropic `message_stop`). */
  readonly complete: boolean;
  /** The closing parts when the body ends before `complete`; throws when the answer is unfinished. */
  end(): StreamPart[];
}

/** Yields the parts of an event stream, then lets the connection finish so it can be reused. */
export async function* translateEvents(
  events: AsyncGenerator<EventSourceMessage>,
  translator: StreamTranslator,
): AsyncGenerator<StreamPart> {
  for await (const event of events) {
    yield* translator.translate(event);
    if (translator.complete) {
      await drain(events);
      return;
    }
  }
  yield* translator.end();
}

/** Reading the rest of a finished stream keeps the keep-alive connection usable for the next call. */
async function drain(events: AsyncGenerator<EventSourceMessage>): Promise<void> {
  try {
    for await (const _event of events) {
      // Events after the terminal one carry nothing we use.
    }
  } catch {
    // The answer is complete; a transport error after its end changes nothing.
  }
}

/** The parts that close every stream: exactly one `finish`, then `usage` when the provider reported it. */
export function closingParts(reason: FinishReason, rawReason: string | null, usage: Usage | null): StreamPart[] {
  const parts: StreamPart[] = [{ type: 'finish', reason, rawReason }];
  if (usage !== null) parts.push({ type: 'usage', usage });
  return parts;
}

/** Builds a Usage from possibly partial counts; null when the provider reported no counts at all. */
export function toUsage(
  promptTokens: number | null | undefined,
  completionTokens: number | null | undefined,
  totalTokens?: number | null,
): Usage | null {
  if (promptTokens == null && completionTokens == null && totalTokens == null) return null;
  const prompt = promptTokens ?? 0;
  const completion = completionTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: totalTokens ?? prompt + completion };
}
