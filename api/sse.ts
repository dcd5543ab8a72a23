/**
 * The one SSE writer. Frames `data:` events (with `id:` for resumption) over a PassThrough body, keeps the
 * connection alive with comments, and lets the caller know when the client went away.
 */
import type { Context } from 'koa';
import { PassThrough } from 'node:stream';

export interface SseWriter {
  send(data: unknown, id?: number): void;
  /** A named event (`event: <name>`), for streams whose clients dispatch on event names. */
  event(name: string, data: unknown, id?: number): void;
  /** `data: [DONE]`, the completions convention's end marker. */
  done(): void;
  end(): void;
  readonly closed: boolean;
  onClose(listener: () => void): void;
}

export function openSse(context: Context, options: { keepAliveMs?: number } = {}): SseWriter {
  const stream = new PassThrough();
  context.req.socket.setNoDelay(true);
  context.req.socket.setTimeout(0);
  context.status = 200;
  context.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  context.body = stream;
  let closed = false;
  const listeners: Array<() => void> = [];
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs ?? 15_000);
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    listeners.forEach((listener) => listener());
  };
  context.req.on('close', close);
  stream.on('close', close);
  const write = (text: string) => {
    if (!closed) stream.write(text);
  };
  return {
    send: (data, id) => write(`${id !== undefined ? `id: ${id}\n` : ''}data: ${JSON.stringify(data)}\n\n`),
    event: (name, data, id) =>
      write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    done: () => write('data: [DONE]\n\n'),
    end: () => {
      if (!closed) stream.end();
      close();
    },
    get closed() {
      return closed;
    },
    onClose: (listener) => listeners.push(listener),
  };
}
