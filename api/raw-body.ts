/**
 * The request's bytes as sent, for routes whose signature covers them exactly (the Stripe and messaging-app
 * webhooks): they are mounted before the JSON body parser and read the body themselves.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.ts';

export async function readRawBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new ApiError('invalid_request', 'Request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
