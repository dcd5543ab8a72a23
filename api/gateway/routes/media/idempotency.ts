/**
 * `Idempotency-Key` on media creates (beyond the spec, as on chat completions): a create repeated with the same key
 * by the same caller gets the same job back and is charged once. The job id is derived from the caller, the kind and
 * the key, so the job's workflow id (`media-<kind>-<id>`) is the lock: Temporal refuses a second workflow of that id
 * (a concurrent twin joins the running one), and the ledger's hold is keyed by it too (a second hold of the same job
 * is a no-op). The request's hash rides in the workflow's memo: the same key with a different body is a 409
 * `conflict`. Keys are 1 to 255 printable ASCII characters; a key is remembered as long as Temporal keeps the job's
 * history (the namespace's retention, 1 day on the dev server).
 */
import { createHash } from 'node:crypto';
import { ApiError } from '../../../errors.ts';

export interface Idempotency {
  key: string;
  /** The job id the key stands for. */
  jobId: string;
  /** What the request asked, hashed: a repeat must ask the same. */
  requestHash: string;
}

/** The request's `Idempotency-Key` header, or undefined without one. */
export const idempotencyKeyOf = (context: { get(field: string): string }): string | undefined =>
  context.get('Idempotency-Key') || undefined;

/** The idempotency of a create, or undefined without the header. */
export function idempotencyOf(
  header: string | undefined,
  userId: string,
  kind: string,
  request: unknown,
): Idempotency | undefined {
  if (header === undefined || header === '') return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
    throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 printable ASCII characters', {
      param: 'Idempotency-Key',
    });
  }
  const digest = (text: string) => createHash('sha256').update(text).digest('base64url');
  return {
    key: header,
    jobId: digest(`${userId}\n${kind}\n${header}`).slice(0, 24),
    requestHash: digest(JSON.stringify(request)),
  };
}
