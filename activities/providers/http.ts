/**
 * The one HTTP layer every provider adapter uses: a JSON POST with the spec's deadlines, read either as a
 * validated JSON body or as server-sent events, with every failure turned into a typed ProviderError.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import { ProviderError, type ProviderConfig, type ProviderFailureKind } from './types.ts';

export const defaultTimeouts = { connectTimeoutMs: 10_000, idleTimeoutMs: 30_000, requestTimeoutMs: 60_000 } as const;

/** A stream buffer larger than this is not a slow event but a broken upstream. */
const maxEventBufferChars = 8 * 1024 * 1024;
const maxErrorMessageChars = 500;

/** What an adapter needs to reach its upstream: identity, transport and deadlines. */
export interface Upstream {
  provider: string;
  fetch: typeof fetch;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  requestTimeoutMs: number;
}

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Sees the answer's headers as they arrive, whatever its status (CallOptions.onHeaders). */
  onHeaders?: (headers: Headers) => void;
}

/** Resolves a provider config into transport settings, filling in the spec's default timeouts. */
export function resolveUpstream(config: ProviderConfig): Upstream {
  return {
    provider: config.provider,
    fetch: config.fetch ?? fetch,
    connectTimeoutMs: config.connectTimeoutMs ?? defaultTimeouts.connectTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs ?? defaultTimeouts.idleTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs ?? defaultTimeouts.requestTimeoutMs,
  };
}

/** Joins a base URL and a path without doubling or dropping the slash between them. */
export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** POSTs a JSON request and returns the response body validated by `schema`. */
export async function postForJson<T>(
  upstream: Upstream,
  request: UpstreamRequest,
  schema: z.ZodType<T>,
  signal?: AbortSignal,
): Promise<T> {
  const guard = new ExchangeGuard(upstream.provider, signal);
  // The whole non-streaming exchange, body included, must finish within the request timeout.
  guard.startTimer('request', 'timeout', upstream.requestTimeoutMs, `request exceeded ${upstream.requestTimeoutMs} ms`);
  try {
    const response = await openExchange(upstream, request, guard, 'application/json');
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw guard.failure(error);
    }
    return parseJsonPayload(upstream.provider, text, schema, 'response body');
  } finally {
    guard.dispose();
  }
}

/**
 * POSTs a JSON request and yields the server-sent events of its response. Silence longer than the idle
 * timeout while waiting for upstream bytes fails with kind `stalled`; leaving the loop early aborts the call.
 */
export async function* postForEvents(
  upstream: Upstream,
  request: UpstreamRequest,
  signal?: AbortSignal,
): AsyncGenerator<EventSourceMessage> {
  const guard = new ExchangeGuard(upstream.provider, signal);
  let finished = false;
  try {
    const response = await openExchange(upstream, request, guard, 'text/event-stream');
    const contentType = response.headers.get('content-type');
    if (contentType !== null && !contentType.includes('text/event-stream')) {
      throw malformed(upstream.provider, `expected an event stream but got content-type ${contentType}`);
    }
    if (response.body === null) throw malformed(upstream.provider, 'the event stream has no body');

    const events: EventSourceMessage[] = [];
    let parseFailure: ProviderError | undefined;
    const parser = createParser({
      onEvent: (event) => events.push(event),
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') parseFailure = malformed(upstream.provider, error.message);
      },
      maxBufferSize: maxEventBufferChars,
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      // The idle clock runs only while we wait for upstream: time the consumer spends on a part is not a stall.
      guard.startTimer('idle', 'stalled', upstream.idleTimeoutMs, `stream idle for ${upstream.idleTimeoutMs} ms`);
      const chunk = await reader.read().catch((error: unknown) => {
        throw guard.failure(error);
      });
      guard.stopTimer('idle');
      if (chunk.done) break;
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      if (parseFailure !== undefined) throw parseFailure;
      yield* events.splice(0);
    }
    parser.feed(decoder.decode());
    parser.reset({ consume: true });
    yield* events.splice(0);
    finished = true;
  } finally {
    // A consumer that stops early (or a failure) must not leave the upstream connection streaming.
    if (!finished) guard.abort('aborted', 'stream abandoned');
    guard.dispose();
  }
}

/** Parses JSON text and validates it, failing with kind `malformed` when either step fails. */
export function parseJsonPayload<T>(provider: string, text: string, schema: z.ZodType<T>, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed(provider, `${what} is not valid JSON: ${truncate(text)}`);
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    throw malformed(provider, `${what} has an unexpected shape: ${truncate(z.prettifyError(result.error))}`);
  }
  return result.data;
}

/** A ProviderError for output we cannot interpret. */
export function malformed(provider: string, message: string): ProviderError {
  return new ProviderError({ provider, kind: 'malformed', message: `${provider}: ${message}` });
}

/** Sends the request and returns the response once its headers arrived with a 2xx status. */
async function openExchange(
  upstream: Upstream,
  request: UpstreamRequest,
  guard: ExchangeGuard,
  accept: string,
): Promise<Response> {
  guard.startTimer(
    'connect',
    'timeout',
    upstream.connectTimeoutMs,
    `no response within ${upstream.connectTimeoutMs} ms`,
  );
  let response: Response;
  try {
    response = await upstream.fetch(request.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, ...request.headers },
      body: JSON.stringify(request.body),
      signal: guard.signal,
    });
  } catch (error) {
    throw guard.failure(error);
  }
  request.onHeaders?.(response.headers);
  // An error body is read under the connect deadline too: a status without its message is still an answer.
  if (!response.ok) throw await httpFailure(upstream.provider, response);
  guard.stopTimer('connect');
  return response;
}

async function httpFailure(provider: string, response: Response): Promise<ProviderError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // The status alone classifies the failure; the body only improves the message.
  }
  const detail = errorMessageFromBody(text) ?? (response.statusText || 'no error message');
  return new ProviderError({
    provider,
    kind: 'http',
    status: response.status,
    message: `${provider}: HTTP ${response.status}: ${detail}`,
    retryAfterSeconds: retryAfterSeconds(response.headers),
  });
}

const errorBodySchema = z.union([
  z.object({ error: z.object({ message: z.string() }) }),
  z.array(z.object({ error: z.object({ message: z.string() }) })).min(1),
  z.object({ error: z.string() }),
  z.object({ message: z.string() }),
]);

/** Finds the human-readable message in the error bodies of OpenAI, Anthropic, Gemini and self-hosted servers. */
function errorMessageFromBody(text: string): string | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return truncate(text);
  }
  const parsed = errorBodySchema.safeParse(value);
  if (!parsed.success) return truncate(text);
  const body = parsed.data;
  if (Array.isArray(body)) return truncate(body[0]?.error.message ?? text);
  if ('message' in body) return truncate(body.message);
  return truncate(typeof body.error === 'string' ? body.error : body.error.message);
}

/** Reads `retry-after-ms` or `Retry-After` (seconds or an HTTP date) as whole seconds. */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const milliseconds = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.ceil(milliseconds / 1000);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function truncate(text: string): string {
  return text.length > maxErrorMessageChars ? `${text.slice(0, maxErrorMessageChars)}…` : text;
}

type TimerName = 'connect' | 'request' | 'idle';
type AbortKind = Extract<ProviderFailureKind, 'timeout' | 'stalled' | 'aborted'>;

/**
 * Owns the abort signal of one exchange. Whoever aborts it (a deadline or the caller) records why, so the
 * rejection that follows — from fetch or from a body read — becomes a ProviderError of the right kind.
 */
class ExchangeGuard {
  readonly signal: AbortSignal;
  private readonly provider: string;
  private readonly controller = new AbortController();
  private readonly timers = new Map<TimerName, NodeJS.Timeout>();
  private readonly callerSignal: AbortSignal | undefined;
  private readonly onCallerAbort = (): void => this.abort('aborted', 'request aborted by the caller');
  private reason: { kind: AbortKind; message: string } | undefined;

  constructor(provider: string, callerSignal: AbortSignal | undefined) {
    this.provider = provider;
    this.signal = this.controller.signal;
    this.callerSignal = callerSignal;
    if (callerSignal?.aborted) this.onCallerAbort();
    else callerSignal?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  startTimer(name: TimerName, kind: AbortKind, milliseconds: number, message: string): void {
    this.stopTimer(name);
    this.timers.set(
      name,
      setTimeout(() => this.abort(kind, message), milliseconds),
    );
  }

  stopTimer(name: TimerName): void {
    clearTimeout(this.timers.get(name));
    this.timers.delete(name);
  }

  abort(kind: AbortKind, message: string): void {
    if (this.reason !== undefined) return;
    this.reason = { kind, message };
    this.controller.abort();
  }

  /** The ProviderError for a rejection seen during this exchange. */
  failure(error: unknown): ProviderError {
    if (error instanceof ProviderError) return error;
    if (this.reason !== undefined) {
      return new ProviderError({
        provider: this.provider,
        kind: this.reason.kind,
        message: `${this.provider}: ${this.reason.message}`,
      });
    }
    return new ProviderError({
      provider: this.provider,
      kind: 'network',
      message: `${this.provider}: ${describe(error)}`,
    });
  }

  dispose(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
  }
}

/** Undici hides the useful part (ECONNREFUSED, "other side closed") in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
