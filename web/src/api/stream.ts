/**
 * The chat's SSE streams: `POST /chat/stream/{session}` and `/chat/loop/{session}` (a POST, so fetch and not
 * EventSource) and `GET /chat/turns/{turn}/stream` to re-attach, parsed by eventsource-parser (the parser the platform
 * uses itself). Each event's `id` is its position in the turn: a broken connection re-attaches after the last one
 * seen (`Last-Event-ID`), so no event is lost or repeated.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { api, failure, RequestFailed } from './client.ts';
import type { StreamEvent } from '../chat/events.ts';

export interface StreamHandlers {
  /** The turn's id, as soon as the service accepted it (the `X-Turn-Id` header). */
  onTurn?(turnId: string): void;
  onEvent(event: StreamEvent, id: number): void;
}

/** Reads an SSE body to its `[DONE]`; answers whether `[DONE]` came and the last event id seen. */
async function readEvents(
  response: Response,
  handlers: StreamHandlers,
  lastId: number,
): Promise<{ done: boolean; lastId: number }> {
  if (!response.body) throw new RequestFailed(response.status, 'error', 'The stream had no body');
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = events.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { done: false, lastId };
    if (value.data === '[DONE]') return { done: true, lastId };
    const id = value.id === undefined || value.id === '' ? lastId : Number(value.id);
    lastId = id;
    handlers.onEvent(JSON.parse(value.data) as StreamEvent, id);
  }
}

export interface ChatRequest {
  message: string;
  image_file_id?: string;
  /** Uploaded images of the caller's, up to 4 (the service's `maxAttachedImages`); not with `image_file_id`. */
  image_file_ids?: string[];
  preferred_agents?: string[];
}

export interface LoopRequest extends ChatRequest {
  max_iterations?: number;
}

/**
 * Sends a message (or starts a loop) and follows its stream to the end, re-attaching after a broken connection.
 * Resolves when the turn's stream ended; rejects with the API's refusal (a 402 for credits, a 400 …).
 */
export async function sendMessage(
  sessionId: string,
  request: ChatRequest | LoopRequest,
  loop: boolean,
  handlers: StreamHandlers,
  signal: AbortSignal,
): Promise<void> {
  // A workspace agent without the Google login answers 302 to /auth/google: not followed by fetch, but said.
  const options = {
    params: { path: { session_id: sessionId } },
    parseAs: 'stream' as const,
    signal,
    redirect: 'manual' as const,
  };
  let result: { error?: unknown; response: Response };
  try {
    result = loop
      ? await api.POST('/chat/loop/{session_id}', { ...options, body: request })
      : await api.POST('/chat/stream/{session_id}', { ...options, body: request });
  } catch (error) {
    if (signal.aborted) return;
    throw new RequestFailed(0, 'network', `The service could not be reached: ${(error as Error).message}`);
  }
  const response = result.response;
  if (response.type === 'opaqueredirect') {
    throw new RequestFailed(
      302,
      'permission_denied',
      'This agent works with your Google account: log in with Google (Settings, Google) and allow access to it',
    );
  }
  if (!response.ok) throw failure(response.status, result.error, response.statusText);
  const turnId = response.headers.get('X-Turn-Id');
  if (turnId) handlers.onTurn?.(turnId);
  let state = { done: false, lastId: -1 };
  try {
    state = await readEvents(response, handlers, -1);
  } catch (error) {
    if (signal.aborted) return;
    if (!turnId) throw error;
  }
  if (!state.done && turnId && !signal.aborted) await followTurn(turnId, handlers, signal, state.lastId);
}

/**
 * Follows a turn's stream from after `afterId` (-1: from its start) to its end: the page re-attaching after a
 * reload, or after the connection broke. Retries a broken connection a few times, each from the last event seen.
 */
export async function followTurn(
  turnId: string,
  handlers: StreamHandlers,
  signal: AbortSignal,
  afterId = -1,
): Promise<void> {
  let lastId = afterId;
  for (let attempt = 0; attempt < 5 && !signal.aborted; attempt++) {
    let result: { error?: unknown; response: Response };
    try {
      const headers: Record<string, string> = lastId >= 0 ? { 'Last-Event-ID': String(lastId) } : {};
      result = await api.GET('/chat/turns/{turn_id}/stream', {
        params: { path: { turn_id: turnId } },
        headers,
        parseAs: 'stream',
        signal,
      });
    } catch (error) {
      if (signal.aborted) return;
      if (attempt === 4) {
        throw new RequestFailed(0, 'network', `The service could not be reached: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
      continue;
    }
    const response = result.response;
    if (!response.ok) throw failure(response.status, result.error, response.statusText);
    try {
      const state = await readEvents(response, handlers, lastId);
      lastId = state.lastId;
      if (state.done) return;
    } catch (error) {
      if (signal.aborted) return;
      if (attempt === 4) throw error;
    }
  }
}
