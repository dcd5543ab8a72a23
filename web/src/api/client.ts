/**
 * The agent service's API as the app calls it: openapi-fetch over the types openapi-typescript generates from the
 * service's OpenAPI document (schema.d.ts, written by `npm run build:web`). Same-origin requests with the session
 * cookie (HttpOnly: no script reads it); the browser's own `Origin` header satisfies the service's CSRF check on
 * writes, so nothing else is sent.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });

/** The document's named schemas (the chat stream's events, the error envelope …). */
export type Schemas = components['schemas'];

/** The JSON body a successful call of `method` on `path` answers (200, 201 or 202), as the document declares it. */
export type Answer<
  Path extends keyof paths,
  Method extends 'get' | 'post' | 'put' | 'patch' | 'delete',
> = paths[Path][Method] extends {
  responses: infer Responses;
}
  ? {
      [Status in keyof Responses]: Status extends 200 | 201 | 202
        ? Responses[Status] extends { content: { 'application/json': infer Body } }
          ? Body
          : never
        : never;
    }[keyof Responses]
  : never;

/** A request the API refused or that never reached it: `message` is the API's own words. */
export class RequestFailed extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

/** The API's error envelope `{error: {type, message}}` as a RequestFailed; anything else described in words. */
export function failure(status: number, body: unknown, statusText = ''): RequestFailed {
  const error = (body as { error?: { type?: unknown; message?: unknown } } | null)?.error;
  if (error && typeof error.message === 'string') {
    return new RequestFailed(status, typeof error.type === 'string' ? error.type : 'error', error.message);
  }
  if (typeof body === 'string' && body.trim()) return new RequestFailed(status, 'error', body.trim().slice(0, 300));
  return new RequestFailed(
    status,
    'error',
    `The server answered ${status}${statusText ? ` ${statusText}` : ''} without saying why`,
  );
}

/**
 * The data of an openapi-fetch call, or a RequestFailed with the API's message. A network failure (the service
 * unreachable) becomes one too, so every page can show `error.message`.
 */
export async function data<T>(
  request: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await request;
  } catch (error) {
    if (error instanceof RequestFailed) throw error;
    throw new RequestFailed(0, 'network', `The service could not be reached: ${(error as Error).message}`);
  }
  if (result.error !== undefined || !result.response.ok) {
    throw failure(result.response.status, result.error, result.response.statusText);
  }
  return result.data as NonNullable<T>;
}

/** What to show a person for any thrown value. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
