/**
 * The one error hierarchy and renderer of the HTTP API: `{error: {type, message, retry_after?}}` with the
 * spec's types and statuses (section 7), for `/v1/*` and `/api/v1/*` alike. The doors that speak another vendor's
 * API answer in that vendor's shape instead (`errorDialect`): `/v1/messages*` as Anthropic does,
 * `{type: "error", error: {type, message}}` with Anthropic's types and statuses (`anthropicError`, common/doors/messages/).
 * `ApiError` itself is common/errors.ts's: the doors' translations, shared with the worker, throw it too.
 */
import type { Context, Middleware } from 'koa';
import type { ZodError } from 'zod';
import { ApiError } from '../common/errors.ts';
import { anthropicError } from '../common/doors/messages/errors.ts';
import { isStoreOutage, someCause } from '../db/errors.ts';
import type { Logger } from '../process/logger.ts';

export { ApiError };

/** A 400 naming the first invalid field, e.g. `messages.0.role: Invalid input`. */
export function invalidRequest(error: ZodError): ApiError {
  const issue = error.issues[0] && telling(error.issues[0]);
  const path = issue?.path.join('.') ?? '';
  const message = issue ? `${path ? `${path}: ` : ''}${issue.message}` : 'Invalid request body';
  return new ApiError('invalid_request', message, { param: path || undefined });
}

/**
 * Within a union none of whose shapes matched (a message's content is a string or blocks), the issue of the shape
 * the value was meant for: the first branch that failed inside the value rather than on its type, its path joined to
 * the union's (`messages.0.content.0: a content block is one of …` rather than `messages.0.content: Invalid input`).
 */
function telling(issue: ZodError['issues'][number]): ZodError['issues'][number] {
  if (issue.code !== 'invalid_union') return issue;
  const branches = (issue as { errors?: Array<ZodError['issues']> }).errors ?? [];
  const inner = branches
    .map((branch) => branch[0])
    .find((first) => first && !(first.code === 'invalid_type' && first.path.length === 0));
  return inner ? telling({ ...inner, path: [...issue.path, ...inner.path] }) : issue;
}

/** A request with images to a model that cannot see them (no `vision` capability): refused before anything starts. */
export function visionRefusal(model: string): ApiError {
  return new ApiError(
    'invalid_request',
    `The model '${model}' does not accept images (it lacks the vision capability); send text only or choose a vision model (GET /v1/models)`,
    { param: 'messages' },
  );
}

/** Renders every error thrown below it; unknown errors become 500 internal_error and are logged. */
export function errorRenderer(logger: Logger): Middleware {
  return async (context, next) => {
    try {
      await next();
      if (context.status === 404 && context.body === undefined) {
        throw new ApiError('not_found', `No route for ${context.method} ${context.path}`);
      }
    } catch (error) {
      renderError(context, toApiError(error, logger, context));
    }
  };
}

export function renderError(context: Context, error: ApiError): void {
  if (error.retryAfterSeconds !== undefined) context.set('Retry-After', String(error.retryAfterSeconds));
  if (errorDialect(context.path) === 'anthropic') {
    const { status, body } = anthropicError(error);
    context.status = status;
    context.body = body;
    return;
  }
  context.status = error.status;
  context.body = error.body();
}

/** Whose error shape a path answers in: Anthropic's on the Messages door, the platform's everywhere else. */
export type ErrorDialect = 'tessera' | 'anthropic';

export function errorDialect(path: string): ErrorDialect {
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? 'anthropic' : 'tessera';
}

function toApiError(error: unknown, logger: Logger, context: Context): ApiError {
  if (error instanceof ApiError) return error;
  const httpError = error as { status?: number; expose?: boolean; message?: string; type?: string };
  if (httpError.status === 400 || httpError.type === 'entity.parse.failed') {
    return new ApiError('invalid_request', `Malformed request body: ${httpError.message ?? 'invalid JSON'}`);
  }
  if (httpError.status === 413) return new ApiError('invalid_request', 'Request body too large');
  if (httpError.status === 405 || httpError.status === 501) {
    return new ApiError('invalid_request', `Method ${context.method} is not allowed on ${context.path}`);
  }
  const outage = outageOf(error);
  if (outage) {
    logger.warn({ err: error, path: context.path, dependency: outage }, 'dependency unavailable');
    return dependencyUnavailable(outage);
  }
  logger.error({ err: error, path: context.path }, 'unhandled error');
  return new ApiError('internal_error', 'Internal server error');
}

/** What the API process depends on (api/readiness.ts watches both). */
export type DependencyName = 'database' | 'temporal';

/** Seconds a client is told to wait when a dependency is down: about the time a supervised restart takes. */
export const outageRetryAfterSeconds = 5;

/**
 * The 503 a client gets while a dependency of the platform is down (docs/operations.md, "When a part fails"):
 * nothing the request asked for was done, unless the error names a `request_id` (`options.requestId`), whose
 * request may still complete and be charged (GET /api/v1/requests/{id} tells).
 */
export function dependencyUnavailable(name: DependencyName, options: { requestId?: string } = {}): ApiError {
  const what = name === 'database' ? 'The platform’s database' : 'The platform’s workflow engine (Temporal)';
  const pending = options.requestId
    ? `; the request may still complete: look it up at GET /api/v1/requests/${options.requestId} before sending it again without an Idempotency-Key`
    : '';
  return new ApiError('service_unavailable', `${what} is unavailable right now; retry shortly${pending}`, {
    retryAfterSeconds: outageRetryAfterSeconds,
    requestId: options.requestId,
  });
}

/**
 * Whether an error says the Temporal server could not be reached: gRPC UNAVAILABLE (14) or DEADLINE_EXCEEDED (4)
 * anywhere in its cause chain, or the transport's connection errors.
 */
export function isTemporalOutage(error: unknown): boolean {
  return someCause(error, (cause) => {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (code === 14 || code === 4) return true;
    return typeof message === 'string' && /transport error|tcp connect error|Connection refused/i.test(message);
  });
}

/** The dependency whose outage an error reports, if any. */
export function outageOf(error: unknown): DependencyName | null {
  if (isStoreOutage(error)) return 'database';
  if (isTemporalOutage(error)) return 'temporal';
  return null;
}
