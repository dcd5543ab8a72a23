/**
 * The one error hierarchy and renderer of the HTTP API: `{error: {type, message, retry_after?}}` with the
 * spec's types and statuses (section 7), for `/v1/*` and `/api/v1/*` alike.
 */
import type { Context, Middleware } from 'koa';
import type { ZodError } from 'zod';
import { errorStatus, type ErrorBody, type ErrorType } from '../common/errors.ts';
import type { Logger } from '../process/logger.ts';

export class ApiError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly param: string | undefined;
  /** For a model outside the caller's plan: the cheapest plan that unlocks it. */
  readonly requiredPlan: string | undefined;

  constructor(
    type: ErrorType,
    message: string,
    options: { retryAfterSeconds?: number; param?: string; requiredPlan?: string } = {},
  ) {
    super(message);
    this.type = type;
    this.status = errorStatus[type];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.param = options.param;
    this.requiredPlan = options.requiredPlan;
  }

  body(): ErrorBody {
    return {
      error: {
        type: this.type,
        message: this.message,
        ...(this.retryAfterSeconds !== undefined ? { retry_after: this.retryAfterSeconds } : {}),
        ...(this.param !== undefined ? { param: this.param } : {}),
        ...(this.requiredPlan !== undefined ? { required_plan: this.requiredPlan } : {}),
      },
    };
  }
}

/** A 400 naming the first invalid field, e.g. `messages.0.role: Invalid input`. */
export function invalidRequest(error: ZodError): ApiError {
  const issue = error.issues[0];
  const path = issue?.path.join('.') ?? '';
  const message = issue ? `${path ? `${path}: ` : ''}${issue.message}` : 'Invalid request body';
  return new ApiError('invalid_request', message, { param: path || undefined });
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
  context.status = error.status;
  if (error.retryAfterSeconds !== undefined) context.set('Retry-After', String(error.retryAfterSeconds));
  context.body = error.body();
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
  logger.error({ err: error, path: context.path }, 'unhandled error');
  return new ApiError('internal_error', 'Internal server error');
}
