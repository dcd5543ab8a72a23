/** Reads an agent stream (`POST /chat/stream/…`, `/chat/loop/…`) event by event, so a test can act between events. */
import { EventSourceParserStream } from 'eventsource-parser/stream';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

export class AgentStreamReader {
  /** The events read so far, in order; the stream's end is `{type: '[DONE]'}`. */
  readonly events: Json[] = [];
  private readonly iterator: AsyncIterator<{ data: string }>;

  constructor(response: Response) {
    const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    this.iterator = events[Symbol.asyncIterator]();
  }

  /** Reads until an event of that type (or matching that predicate) arrives; the stream ending first throws. */
  async until(wanted: string | ((event: Json) => boolean)): Promise<Json> {
    const matches = typeof wanted === 'string' ? (event: Json) => event.type === wanted : wanted;
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) throw new Error(`the stream ended before ${String(wanted)}: ${JSON.stringify(this.events)}`);
      const data = next.value.data === '[DONE]' ? { type: '[DONE]' } : (JSON.parse(next.value.data) as Json);
      this.events.push(data);
      if (matches(data)) return data;
    }
  }

  /** The rest of the turn: its events up to [DONE] (included). */
  async rest(): Promise<Json[]> {
    await this.until('[DONE]');
    return this.events;
  }
}
