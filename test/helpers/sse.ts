/** Reads a whole SSE response into its events (eventsource-parser, the parser the provider adapters use). */
import { EventSourceParserStream } from 'eventsource-parser/stream';

export interface SseEvent {
  event: string;
  data: unknown;
  id: string | undefined;
}

export async function readSse(response: Response): Promise<SseEvent[]> {
  if (!response.body) throw new Error('the response has no body');
  const events: SseEvent[] = [];
  const stream = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  for await (const message of stream) {
    let data: unknown = message.data;
    try {
      data = JSON.parse(message.data);
    } catch {
      // Left as text ([DONE]).
    }
    events.push({ event: message.event ?? 'message', data, id: message.id });
  }
  return events;
}
