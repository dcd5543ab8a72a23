/**
 * The HTTP layer of the hosted media engines: one exchange under a deadline, the provider's error bodies read for
 * their message, and every failure an EngineError. As for model providers (activities/providers/http.ts), network
 * failures, timeouts, 408, 409, 429 and 5xx are `retryable` (the next engine may serve); other statuses are the
 * provider refusing this input, which another engine would most likely refuse too.
 */
import { z } from 'zod';
import { EngineError, type MediaFile } from '../engine.ts';
import { mp3DurationSeconds } from '../mp3-duration.ts';

export const defaultMediaTimeoutMs = 120_000;
/** Outputs larger than this are refused rather than buffered (a video of a few minutes fits). */
const maxOutputBytes = 512 * 1024 * 1024;
const maxMessageChars = 500;

/** What an engine needs to reach its provider. */
export interface MediaUpstream {
  engine: string;
  fetch: typeof fetch;
  timeoutMs: number;
}

export interface MediaHttpConfig {
  /** Deadline of one exchange, body included (default 120 s: speech and images take a while). */
  timeoutMs?: number;
  /** Replaces global fetch (tests). */
  fetch?: typeof fetch;
}

export function mediaUpstream(engine: string, config: MediaHttpConfig): MediaUpstream {
  return { engine, fetch: config.fetch ?? fetch, timeoutMs: config.timeoutMs ?? defaultMediaTimeoutMs };
}

export interface MediaExchange {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; FormData as multipart. */
  body?: Record<string, unknown> | FormData;
}

/**
 * Performs one exchange and hands the successful response to `read` while the deadline still runs, so a body that
 * stops arriving fails as a timeout too.
 */
export async function exchange<T>(
  upstream: MediaUpstream,
  request: MediaExchange,
  read: (response: Response) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const deadline = AbortSignal.timeout(upstream.timeoutMs);
  const combined = signal === undefined ? deadline : AbortSignal.any([signal, deadline]);
  const json = request.body !== undefined && !(request.body instanceof FormData);
  try {
    const response = await upstream.fetch(request.url, {
      method: request.method,
      headers: { ...(json ? { 'content-type': 'application/json' } : {}), ...request.headers },
      body: json ? JSON.stringify(request.body) : (request.body as FormData | undefined),
      signal: combined,
    });
    if (!response.ok) throw await httpFailure(upstream.engine, response);
    return await read(response);
  } catch (error) {
    if (error instanceof EngineError) throw error;
    if (signal?.aborted) {
      throw new EngineError(upstream.engine, 'request aborted by the caller', { retryable: false, cause: error });
    }
    if (deadline.aborted) {
      throw new EngineError(upstream.engine, `no complete answer within ${upstream.timeoutMs} ms`, {
        retryable: true,
        cause: error,
      });
    }
    throw new EngineError(upstream.engine, describe(error), { retryable: true, cause: error });
  }
}

/** Reads a JSON body validated by `schema`; anything else is a broken upstream (retryable). */
export async function readJson<T>(engine: string, response: Response, schema: z.ZodType<T>): Promise<T> {
  const text = await response.text();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EngineError(engine, `response is not JSON: ${truncate(text)}`, { retryable: true });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const problem = truncate(z.prettifyError(parsed.error));
    throw new EngineError(engine, `response has an unexpected shape: ${problem}`, { retryable: true });
  }
  return parsed.data;
}

/** Reads a binary body, which must be of `expected` type (e.g. `audio/`) and not empty. */
export async function readFile(engine: string, response: Response, expected: string): Promise<MediaFile> {
  const contentType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!contentType.startsWith(expected)) {
    throw new EngineError(engine, `expected ${expected}… but got content-type ${contentType || 'none'}`, {
      retryable: true,
    });
  }
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > maxOutputBytes) {
    throw new EngineError(engine, `output of ${declared} bytes is larger than allowed`, { retryable: false });
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length === 0) throw new EngineError(engine, 'empty output', { retryable: true });
  if (bytes.length > maxOutputBytes) {
    throw new EngineError(engine, `output of ${bytes.length} bytes is larger than allowed`, { retryable: false });
  }
  return { bytes, contentType };
}

/** An MP3 with its playing time, when its frames can be walked. */
export function withDuration(file: MediaFile): MediaFile & { durationSeconds?: number } {
  const durationSeconds = file.contentType === 'audio/mpeg' ? mp3DurationSeconds(file.bytes) : undefined;
  return durationSeconds === undefined ? file : { ...file, durationSeconds };
}

/** Downloads an output URL a provider returned (Replicate's files, OpenAI image URLs). */
export function downloadOutput(
  upstream: MediaUpstream,
  url: string,
  expected: string,
  signal?: AbortSignal,
): Promise<MediaFile> {
  return exchange(
    upstream,
    { method: 'GET', url },
    (response) => readFile(upstream.engine, response, expected),
    signal,
  );
}

/** Joins a base URL and a path without doubling or dropping the slash between them. */
export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

async function httpFailure(engine: string, response: Response): Promise<EngineError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // The status alone classifies the failure.
  }
  const status = response.status;
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
  const detail = messageOf(text) ?? (response.statusText || 'no error message');
  return new EngineError(engine, `HTTP ${status}: ${detail}`, { retryable, status });
}

const errorBodySchema = z.union([
  // OpenAI
  z.object({ error: z.object({ message: z.string() }) }),
  // ElevenLabs: {detail: {status, message}} or FastAPI's validation list
  z.object({ detail: z.object({ message: z.string() }) }),
  z.object({ detail: z.array(z.object({ msg: z.string(), loc: z.array(z.unknown()).optional() })).min(1) }),
  // Replicate: {title, detail, status}
  z.object({ title: z.string().optional(), detail: z.string() }),
]);

/** The human-readable message of OpenAI, ElevenLabs and Replicate error bodies. */
function messageOf(text: string): string | undefined {
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
  if ('error' in body) return truncate(body.error.message);
  if (typeof body.detail === 'string') {
    const title = 'title' in body ? body.title : undefined;
    return truncate(title ? `${title}: ${body.detail}` : body.detail);
  }
  if (Array.isArray(body.detail)) {
    return truncate(body.detail.map((issue) => `${(issue.loc ?? []).join('.')}: ${issue.msg}`).join('; '));
  }
  return truncate(body.detail.message);
}

function truncate(text: string): string {
  return text.length > maxMessageChars ? `${text.slice(0, maxMessageChars)}…` : text;
}

/** Undici hides the useful part (ECONNREFUSED, "other side closed") in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
