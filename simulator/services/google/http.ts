/**
 * What the simulated Google APIs share on the wire: reading bodies (JSON, forms, bytes), Google's error shape
 * (`{error: {code, message, errors: [{message, domain, reason}], status}}`), and `fields` partial responses.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';

export const maxBodyBytes = 8 * 1024 * 1024;

/** The body's bytes, or undefined past `limit`. */
export async function readBytes(request: IncomingMessage, limit = maxBodyBytes): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > limit) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** A JSON object body; null when the body is empty; undefined when it is not a JSON object. */
export async function readJson(request: IncomingMessage): Promise<Record<string, unknown> | null | undefined> {
  const bytes = await readBytes(request);
  if (bytes === undefined) return undefined;
  if (bytes.length === 0) return null;
  try {
    const value = JSON.parse(bytes.toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const statusNames: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  410: 'NOT_FOUND',
  412: 'FAILED_PRECONDITION',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
};

const defaultReasons: Record<number, string> = {
  400: 'badRequest',
  401: 'authError',
  403: 'forbidden',
  404: 'notFound',
  409: 'duplicate',
  410: 'deleted',
  413: 'uploadTooLarge',
};

/** Google's JSON error. */
export function googleError(
  response: ServerResponse,
  code: number,
  message: string,
  options: { reason?: string; status?: string; headers?: Record<string, string>; details?: unknown[] } = {},
): void {
  sendJson(
    response,
    code,
    {
      error: {
        code,
        message,
        errors: [{ message, domain: 'global', reason: options.reason ?? defaultReasons[code] ?? 'error' }],
        status: options.status ?? statusNames[code] ?? 'UNKNOWN',
        ...(options.details ? { details: options.details } : {}),
      },
    },
    options.headers,
  );
}

export const notFound = (response: ServerResponse, message = 'Requested entity was not found.') =>
  googleError(response, 404, message);

export const badRequest = (response: ServerResponse, message: string) => googleError(response, 400, message);

/**
 * A `fields` mask applied to an answer, as Google's partial responses do: `a,b(c,d),e.f` keeps `a`, `c` and `d` of
 * `b` (of each item when `b` is a list), and `f` of `e`. No mask: the answer whole.
 */
export function applyFields<T>(value: T, mask: string | null): T {
  if (!mask || mask.trim() === '' || mask.trim() === '*') return value;
  return pick(value, parseMask(mask)) as T;
}

type Mask = Map<string, Mask | null>;

function parseMask(text: string): Mask {
  let position = 0;
  const parseList = (): Mask => {
    const mask: Mask = new Map();
    for (;;) {
      const match = /^\s*([A-Za-z0-9_*@]+)/.exec(text.slice(position));
      if (!match) break;
      position += match[0].length;
      const path = [match[1]!];
      while (text[position] === '.' || text[position] === '/') {
        position += 1;
        const next = /^([A-Za-z0-9_*@]+)/.exec(text.slice(position));
        if (!next) break;
        path.push(next[1]!);
        position += next[0].length;
      }
      let inner: Mask | null = null;
      if (text[position] === '(') {
        position += 1;
        inner = parseList();
        if (text[position] === ')') position += 1;
      }
      let target = mask;
      for (const [index, key] of path.entries()) {
        const last = index === path.length - 1;
        if (last) {
          const existing = target.get(key);
          target.set(key, existing && inner ? new Map([...existing, ...inner]) : (inner ?? existing ?? null));
        } else {
          let child = target.get(key);
          if (!child) {
            child = new Map();
            target.set(key, child);
          }
          target = child;
        }
      }
      while (text[position] === ' ') position += 1;
      if (text[position] !== ',') break;
      position += 1;
    }
    return mask;
  };
  return parseList();
}

function pick(value: unknown, mask: Mask): unknown {
  if (Array.isArray(value)) return value.map((item) => pick(item, mask));
  if (typeof value !== 'object' || value === null) return value;
  if (mask.has('*')) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of mask) {
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined) continue;
    out[key] = inner ? pick(field, inner) : field;
  }
  return out;
}

/** A request's bearer token. */
export function bearerToken(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  return match?.[1];
}

/** `http://<host>` of the request: the simulator names its own URLs after the address it was reached at. */
export function ownOrigin(request: IncomingMessage): string {
  return `http://${request.headers.host ?? '127.0.0.1'}`;
}
