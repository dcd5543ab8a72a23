/**
 * The bench's HTTP client: plain `node:http` over one keep-alive agent, used the same way for the gateway and
 * for the simulator so both sides pay the same client cost. Every request has a deadline, so no call can hang.
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';

export const agent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 });

const requestTimeoutMs = 30_000;
/** An agent chat message routes (a model call) before it answers: more time than one completion. */
const agentRequestTimeoutMs = 60_000;

export interface Sample {
  ok: boolean;
  status: number;
  /** Request start to the end of the response body. */
  totalMs: number;
  /** Streaming only: request start to the first content-bearing `data:` event. */
  firstTokenMs?: number;
  /** The response's `Server-Timing` header, when it sent one. */
  serverTiming?: string;
  /** Why the call did not count (status, an unexpected body, missing events), when the client says. */
  failure?: string;
}

export interface Target {
  url: string;
  headers: Record<string, string>;
}

/**
 * One timed request: `send` issues it and reports its outcome through `finish`, which keeps the first report only
 * (a response error after the end, a timeout after an error) and adds the time since the start.
 */
function timed<S extends Sample>(
  send: (finish: (sample: Omit<S, 'totalMs'>) => void, startedAt: number) => void,
): Promise<S> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    send((sample) => {
      if (settled) return;
      settled = true;
      resolve({ ...sample, totalMs: performance.now() - startedAt } as S);
    }, startedAt);
  });
}

/** The request headers of a call to `target`: accepting `accept`, with a JSON body's type and length when it has one. */
function requestHeaders(target: Target, accept: string, body?: string): Record<string, string | number> {
  return {
    ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
    accept,
    ...target.headers,
  };
}

/** Sends a request with a deadline (`timeoutMs`, then destroyed: the error handler reports it) and its body. */
function dispatch(
  req: ClientRequest,
  timeoutMs: number,
  onError: (cause: Error) => void,
  body: string | undefined,
): void {
  req.setTimeout(timeoutMs, () => req.destroy(new Error('bench request timed out')));
  req.on('error', onError);
  req.end(body);
}

/** An `expect` for a JSON answer: parses it and applies `check`; false for anything that is not JSON. */
export function jsonAnswer<T>(check: (body: T) => boolean): (responseBody: string) => boolean {
  return (text) => {
    try {
      return check(JSON.parse(text) as T);
    } catch {
      return false;
    }
  };
}

/** A request that failed before any response (refused, reset, timed out). */
const requestFailure = (cause: Error) => ({ ok: false, status: 0, failure: `request error: ${cause.message}` });

/**
 * POSTs a JSON body and reads the whole response; for event streams, also times the first content event. With
 * `expect`, a non-streamed 200 counts as a success only when its body passes it (an answer of the expected shape).
 */
export function post(
  target: Target,
  body: string,
  stream: boolean,
  expect?: (responseBody: string) => boolean,
): Promise<Sample> {
  return timed<Sample>((finish, startedAt) => {
    const headers = requestHeaders(target, stream ? 'text/event-stream' : 'application/json', body);
    const req = httpRequest(target.url, { method: 'POST', agent, headers }, (res) => {
      const status = res.statusCode ?? 0;
      const serverTiming = [res.headers['server-timing']].flat().join(', ') || undefined;
      res.setEncoding('utf8');
      let firstTokenMs: number | undefined;
      let buffer = '';
      let sawDone = false;
      let responseBody = '';
      res.on('data', (chunk: string) => {
        if (expect && !stream) responseBody += chunk;
        if (!stream || status !== 200) return;
        if (firstTokenMs !== undefined && sawDone) return;
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          for (const line of event.split('\n')) {
            if (!line.startsWith('data:')) continue;
            const data = line.slice(5).trim();
            if (data === '[DONE]') sawDone = true;
            else if (firstTokenMs === undefined && hasContent(data)) firstTokenMs = performance.now() - startedAt;
          }
        }
      });
      res.on('end', () => {
        const ok =
          status === 200 &&
          (stream ? firstTokenMs !== undefined && sawDone : expect === undefined || expect(responseBody));
        finish({
          ok,
          status,
          ...(!ok && expect && !stream ? { failure: `HTTP ${status} ${responseBody.slice(0, 300)}` } : {}),
          ...(firstTokenMs === undefined ? {} : { firstTokenMs }),
          ...(serverTiming === undefined ? {} : { serverTiming }),
        });
      });
      res.on('error', () => finish({ ok: false, status }));
    });
    dispatch(req, requestTimeoutMs, () => finish({ ok: false, status: 0 }), body);
  });
}

/**
 * One plain request (GET, or POST with a JSON body) read to its end, counted (`ok`) when it answers `okStatus` and,
 * with `expect`, its body passes the check; the body is handed to `expect`, so a caller can keep what it needs.
 */
export function exchange(
  method: 'GET' | 'POST',
  target: Target,
  options: { body?: string; okStatus?: number; expect?: (responseBody: string) => boolean } = {},
): Promise<Sample> {
  const { body, okStatus = 200, expect } = options;
  return timed<Sample>((finish) => {
    const headers = requestHeaders(target, 'application/json', body);
    const req = httpRequest(target.url, { method, agent, headers }, (res) => {
      const status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      let responseBody = '';
      res.on('data', (chunk: string) => (responseBody += chunk));
      res.on('end', () => {
        const ok = status === okStatus && (expect === undefined || expect(responseBody));
        finish({ ok, status, ...(ok ? {} : { failure: `HTTP ${status} ${responseBody.slice(0, 300)}` }) });
      });
      res.on('error', () => finish({ ok: false, status }));
    });
    dispatch(req, requestTimeoutMs, (cause) => finish(requestFailure(cause)), body);
  });
}

/** A chunk whose first choice carries text or a tool-call fragment (not the bare role chunk). */
function hasContent(data: string): boolean {
  try {
    const chunk = JSON.parse(data) as {
      choices?: Array<{ delta?: { content?: string | null; tool_calls?: unknown[] } }>;
    };
    const delta = chunk.choices?.[0]?.delta;
    return (typeof delta?.content === 'string' && delta.content.length > 0) || (delta?.tool_calls?.length ?? 0) > 0;
  } catch {
    return false;
  }
}

export interface AgentSample extends Sample {
  /** Request start to the `routed` event. */
  routedMs?: number;
}

/**
 * POSTs one message to the agent service's chat (`/chat/stream/{session_id}`) and reads its whole stream, timing the
 * `routed` event and the first `token` event (`firstTokenMs`). It counts (`ok`) only with a routed event carrying
 * agent_id and confidence, a token, and the closing `data: [DONE]`, without an `error` event.
 */
export function postAgentChat(target: Target, body: string): Promise<AgentSample> {
  return timed<AgentSample>((finish, startedAt) => {
    const headers = requestHeaders(target, 'text/event-stream', body);
    const req = httpRequest(target.url, { method: 'POST', agent, headers }, (res) => {
      const status = res.statusCode ?? 0;
      const streamed = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
      res.setEncoding('utf8');
      let buffer = '';
      let routedMs: number | undefined;
      let firstTokenMs: number | undefined;
      let done = false;
      let error: string | undefined;
      res.on('data', (chunk: string) => {
        buffer += chunk;
        if (status !== 200 || !streamed) return;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          if (data === '') continue;
          if (data === '[DONE]') {
            done = true;
            continue;
          }
          let event: { type?: string; agent_id?: unknown; confidence?: unknown; text?: unknown; message?: unknown };
          try {
            event = JSON.parse(data) as typeof event;
          } catch {
            error ??= `malformed event: ${data.slice(0, 200)}`;
            continue;
          }
          const at = performance.now() - startedAt;
          if (event.type === 'routed' && routedMs === undefined) {
            if (typeof event.agent_id !== 'string' || typeof event.confidence !== 'number') {
              error ??= `routed event without agent_id and confidence: ${data.slice(0, 200)}`;
            }
            routedMs = at;
          } else if (event.type === 'token' && firstTokenMs === undefined && typeof event.text === 'string') {
            firstTokenMs = at;
          } else if (event.type === 'error') {
            error ??= `error event: ${data.slice(0, 300)}`;
          }
        }
      });
      res.on('end', () => {
        let failure: string | undefined;
        if (status !== 200) failure = `HTTP ${status} ${buffer.slice(0, 300)}`;
        else if (!streamed) failure = `HTTP 200 but ${res.headers['content-type'] ?? 'no content type'}, not SSE`;
        else if (error) failure = error;
        else if (routedMs === undefined) failure = 'no routed event';
        else if (firstTokenMs === undefined) failure = 'no token event';
        else if (!done) failure = 'the stream did not end with data: [DONE]';
        finish({
          ok: failure === undefined,
          status,
          ...(routedMs === undefined ? {} : { routedMs }),
          ...(firstTokenMs === undefined ? {} : { firstTokenMs }),
          ...(failure === undefined ? {} : { failure }),
        });
      });
      res.on('error', (cause) => finish({ ok: false, status, failure: `response error: ${cause.message}` }));
    });
    dispatch(req, agentRequestTimeoutMs, (cause) => finish(requestFailure(cause)), body);
  });
}
