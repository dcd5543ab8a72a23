/**
 * The request's bytes as sent, for routes whose signature covers them exactly (the Stripe and messaging-app
 * webhooks): they are mounted before the JSON body parser and read the body themselves.
 */
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { ApiError, invalidRequest } from './errors.ts';

/**
 * The body's bytes, refused past `limit` (400, or `413 payload_too_large` with `tooLarge`, which names the limit; a
 * declared Content-Length past it is refused before anything is read).
 */
export async function readRawBody(
  request: IncomingMessage,
  limit: number,
  tooLarge?: { status: 413; what: string },
): Promise<Buffer> {
  const refuse = () =>
    tooLarge
      ? new ApiError('payload_too_large', `${tooLarge.what} may be ${limit} bytes at most`)
      : new ApiError('invalid_request', 'Request body too large');
  if (Number(request.headers['content-length'] ?? 0) > limit) throw refuse();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw refuse();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The raw body as JSON checked against `schema`: 400 `invalid_request` when it is not JSON or does not match. */
export function parseJsonBody<Schema extends z.ZodType>(raw: Buffer, schema: Schema): z.infer<Schema> {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError('invalid_request', 'The body is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw invalidRequest(parsed.error);
  return parsed.data;
}
