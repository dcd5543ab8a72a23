/**
 * The loop shared by every adapter's `stream`: feed server-sent events to a protocol's translator and yield
 * the typed parts it produces, so adapters hold only the protocol knowledge.
 *
 * Each translator reads its provider's documented event grammar, not only the streams the simulator makes: it reads
 * everything the grammar allows (content carried in a message's first event is content) and throws what it forbids as
 * a `malformed` ProviderError (a message that starts again, a delta for a block that is not open, a tool call whose
 * arguments are not a JSON object when it closes, content after the finish, events after the terminal one). Before
 * the first token such an attempt fails over like any malformed answer; after it, the client gets the documented
 * error event, never a normal end with broken tool JSON (activities/provider-calls.ts).
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
  /** An event after the terminal one: throws when the grammar forbids it (absent: nothing follows a terminal event). */
  afterComplete?(event: EventSourceMessage): void;
}

/** Yields the parts of an event stream, then lets the connection finish so it can be reused. */
export async function* translateEvents(
  events: AsyncGenerator<EventSourceMessage>,
  translator: StreamTranslator,
): AsyncGenerator<StreamPart> {
  for await (const event of events) {
    yield* translator.translate(event);
    if (translator.complete) {
      await drain(events, translator);
      return;
    }
  }
  yield* translator.end();
}

/**
 * Reading the rest of a finished stream keeps the keep-alive connection usable for the next call. An event the
 * grammar forbids after the terminal one makes the answer malformed; a transport error after its end changes nothing.
 */
async function drain(events: AsyncGenerator<EventSourceMessage>, translator: StreamTranslator): Promise<void> {
  const after: EventSourceMessage[] = [];
  try {
    for await (const event of events) after.push(event);
  } catch {
    // The answer is complete; a transport error after its end changes nothing.
  }
  for (const event of after) translator.afterComplete?.(event);
}

/** The parts that close every stream: exactly one `finish`, then `usage` when the provider reported it. */
export function closingParts(
  reason: FinishReason,
  rawReason: string | null,
  usage: Usage | null,
  stopSequence?: string | null,
): StreamPart[] {
  const parts: StreamPart[] = [{ type: 'finish', reason, rawReason, ...(stopSequence ? { stopSequence } : {}) }];
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

/** Whether a tool call's argument text is a JSON object, as every tool call's arguments must be once it closed. */
export function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}
