/** Writing simulator responses — JSON bodies and server-sent events — with a request's faults applied. */
import type { ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { defaultStallMs, type Fault } from './faults.ts';

/** One server-sent event; `data` is written as is when a string (`[DONE]`), else as JSON. */
export interface EventFrame {
  event?: string;
  data: unknown;
  /** Completion tokens this frame carries; faults trigger after a count of them. */
  tokens: number;
}

/** An unparsable data line, as a broken upstream would send it. */
const malformedEvent = 'data: {"simulated": malformed\n\n';

/** Waits, unless the client goes away first; resolves false in that case. */
export async function pause(milliseconds: number, signal: AbortSignal): Promise<boolean> {
  try {
    await delay(milliseconds, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** Sends a complete JSON response. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

/** Sends a successful JSON reply; stall, cut and malformed faults act on the body as a whole. */
export async function sendJsonReply(
  response: ServerResponse,
  body: unknown,
  fault: Fault,
  signal: AbortSignal,
): Promise<void> {
  const text = JSON.stringify(body);
  const half = text.slice(0, Math.floor(text.length / 2));
  if (fault.malformed_after_tokens !== undefined) {
    sendRaw(response, half);
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  if (fault.stall_after_tokens !== undefined) {
    response.flushHeaders();
    if (!(await pause(fault.stall_ms ?? defaultStallMs, signal))) return;
  }
  if (fault.cut_after_tokens !== undefined) {
    await write(response, half);
    response.destroy();
    return;
  }
  response.end(text);
}

/** Streams server-sent events, applying the stall, malformed-line and cut faults at their token counts. */
export async function sendEvents(
  response: ServerResponse,
  frames: EventFrame[],
  fault: Fault,
  signal: AbortSignal,
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
  const pending = {
    stall: fault.stall_after_tokens,
    malformed: fault.malformed_after_tokens,
    cut: fault.cut_after_tokens,
  };
  let emittedTokens = 0;
  for (const frame of frames) {
    if (pending.stall !== undefined && emittedTokens >= pending.stall) {
      pending.stall = undefined;
      if (!(await pause(fault.stall_ms ?? defaultStallMs, signal))) return;
    }
    if (pending.malformed !== undefined && emittedTokens >= pending.malformed) {
      pending.malformed = undefined;
      await write(response, malformedEvent);
    }
    if (pending.cut !== undefined && emittedTokens >= pending.cut) {
      response.destroy();
      return;
    }
    await write(response, formatEvent(frame));
    if (signal.aborted) return;
    emittedTokens += frame.tokens;
  }
  response.end();
}

/** Serializes one frame in SSE syntax. */
export function formatEvent(frame: EventFrame): string {
  const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data);
  return `${frame.event === undefined ? '' : `event: ${frame.event}\n`}data: ${data}\n\n`;
}

function sendRaw(response: ServerResponse, text: string): void {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** Resolves once the chunk reached the socket, so a cut that follows cannot swallow it. */
function write(response: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve) => {
    response.write(text, () => resolve());
  });
}

/** A request's parsed JSON body, or undefined when it is not JSON or passes `maxBytes`. */
export async function readJsonBody(request: AsyncIterable<unknown>, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBytes) return undefined;
    chunks.push(buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** A request's JSON object body, or undefined when it is not one or passes `maxBytes`. */
export async function readJsonObject(
  request: AsyncIterable<unknown>,
  maxBytes: number,
): Promise<Record<string, unknown> | undefined> {
  const value = await readJsonBody(request, maxBytes);
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
