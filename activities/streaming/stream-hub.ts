/**
 * In-process relay of a streamed completion's events from the provider call (a local activity running in
 * the API process thanks to eager workflow start) to the HTTP response waiting for them. Tokens take this
 * path with no network hop; the stream journal is the durable copy.
 */
import type { SequencedStreamEvent } from '../../common/completion.ts';

export interface StreamSubscription extends AsyncIterable<SequencedStreamEvent> {
  /** Events received but not yet consumed, without waiting. */
  drain(): SequencedStreamEvent[];
  close(): void;
}

type Listener = (event: SequencedStreamEvent) => void;

export class StreamHub {
  private readonly listeners = new Map<string, Listener>();

  /** True when a response in this process is waiting for the request's events. */
  has(requestId: string): boolean {
    return this.listeners.has(requestId);
  }

  publish(requestId: string, event: SequencedStreamEvent): void {
    this.listeners.get(requestId)?.(event);
  }

  subscribe(requestId: string): StreamSubscription {
    const queue: SequencedStreamEvent[] = [];
    let wake: (() => void) | null = null;
    let closed = false;
    this.listeners.set(requestId, (event) => {
      queue.push(event);
      wake?.();
    });
    const close = () => {
      closed = true;
      this.listeners.delete(requestId);
      wake?.();
    };
    return {
      drain: () => queue.splice(0, queue.length),
      close,
      async *[Symbol.asyncIterator]() {
        while (!closed) {
          if (queue.length > 0) {
            yield queue.shift()!;
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      },
    };
  }
}
