/**
 * What `web_search` needs from a search engine, and the one way the engine adapters (and `weather`) call an upstream
 * JSON API: `fetch` with the tool's abort signal, the answer checked with zod, and failures turned into `ToolError`s
 * the model can read (5xx, 429, timeouts and unreachable servers retryable; a refused key or request not).
 */
import type { z } from 'zod';
import { ToolError } from '../tool.ts';

export interface SearchResult {
  /** Plain text. */
  title: string;
  url: string;
  /** May carry markup (engines highlight the query's words); `web_search` strips it. */
  snippet: string;
}

export interface SearchEngine {
  /** Short id reported with the results, e.g. `searxng`. */
  id: string;
  search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]>;
}

export interface UpstreamRequest<T> {
  /** The service's name in messages, e.g. `Brave Search`. */
  service: string;
  url: URL;
  /** Sent as JSON with POST; without it the request is a GET. */
  body?: unknown;
  headers?: Record<string, string>;
  signal: AbortSignal;
  schema: z.ZodType<T>;
  /** The environment variable holding the key, named when the key is refused. */
  keyVariable?: string;
  /** Whether a 4xx answer means the key was refused; by default 401 and 403 do. */
  keyRefused?(status: number, body: unknown): boolean;
  /** What to tell the model about another 4xx answer: the upstream's own explanation or a hint. */
  errorDetail?(status: number, body: unknown): string | undefined;
}

/** Calls an upstream JSON API and returns its validated answer. */
export async function requestJson<T>(request: UpstreamRequest<T>): Promise<T> {
  const { service, url, signal } = request;
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.body === undefined ? 'GET' : 'POST',
      headers: {
        accept: 'application/json',
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...request.headers,
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw new ToolError(`${service} did not answer in time`, { retryable: true, cause: error });
    throw new ToolError(`cannot reach ${service}`, { retryable: true, cause: error });
  }
  const text = await readText(response, service, signal);
  const body = parseJson(text);
  if (!response.ok) throw statusError(request, response.status, body);
  if (body === undefined) throw new ToolError(`${service} answered with something other than JSON`);
  const parsed = request.schema.safeParse(body);
  if (!parsed.success) throw new ToolError(`${service} answered in an unexpected shape`);
  return parsed.data;
}

/** Joins an operator-configured base URL (with or without a trailing slash) and a path. */
export function endpoint(baseUrl: string, path: string): URL {
  return new URL(`${baseUrl.replace(/\/+$/, '')}${path}`);
}

/** Tags removed and the common character references decoded, whitespace collapsed. */
export function plainText(html: string): string {
  return html
    .replace(/<\/?[a-z][^<>]*>/gi, '')
    .replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp);/gi, (_, entity: string) => decodeEntity(entity))
    .replace(/\s+/g, ' ')
    .trim();
}

const namedEntities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntity(entity: string): string {
  const lower = entity.toLowerCase();
  if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16));
  if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10));
  return namedEntities[lower] ?? '';
}

async function readText(response: Response, service: string, signal: AbortSignal): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    const reason = signal.aborted ? 'did not finish its answer in time' : 'broke off its answer';
    throw new ToolError(`${service} ${reason}`, { retryable: true, cause: error });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function statusError<T>(request: UpstreamRequest<T>, status: number, body: unknown): ToolError {
  const { service } = request;
  if (status >= 500) return new ToolError(`${service} failed (HTTP ${status}); try again`, { retryable: true });
  if (status === 429) return new ToolError(`${service} is rate limiting requests (HTTP 429)`, { retryable: true });
  const keyRefused = request.keyRefused ?? ((code: number) => code === 401 || code === 403);
  if (request.keyVariable !== undefined && keyRefused(status, body)) {
    return new ToolError(`${service} refused the API key (HTTP ${status}); check ${request.keyVariable}`);
  }
  const detail = request.errorDetail?.(status, body);
  return new ToolError(`${service} refused the request (HTTP ${status})${detail === undefined ? '' : `: ${detail}`}`);
}
