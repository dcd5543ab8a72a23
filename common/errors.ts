/**
 * Error types of the public API (spec section 7) and the HTTP status each maps to. Workflow-safe.
 * Temporal failures carry the same names as their `type`, so a workflow's failure renders the same way.
 */
export const errorStatus = {
  invalid_request: 400,
  authentication_error: 401,
  insufficient_credits: 402,
  permission_denied: 403,
  not_found: 404,
  model_not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  internal_error: 500,
  upstream_error: 502,
  service_unavailable: 503,
} as const;

export type ErrorType = keyof typeof errorStatus;

export interface ErrorBody {
  error: {
    type: ErrorType;
    message: string;
    retry_after?: number;
    provider?: string;
    param?: string;
    required_plan?: string;
    /** With a 503 whose request may still complete: the id to look it up by. */
    request_id?: string;
  };
}

/** The platform's error: its type (and so its status), message and details, rendered by api/errors.ts. */
export class ApiError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly param: string | undefined;
  /** For a model outside the caller's plan: the cheapest plan that unlocks it. */
  readonly requiredPlan: string | undefined;
  /** A request that may still complete although this error answered it: where to look it up. */
  readonly requestId: string | undefined;

  constructor(
    type: ErrorType,
    message: string,
    options: { retryAfterSeconds?: number; param?: string; requiredPlan?: string; requestId?: string } = {},
  ) {
    super(message);
    this.type = type;
    this.status = errorStatus[type];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.param = options.param;
    this.requiredPlan = options.requiredPlan;
    this.requestId = options.requestId;
  }

  body(): ErrorBody {
    return {
      error: {
        type: this.type,
        message: this.message,
        ...(this.retryAfterSeconds !== undefined ? { retry_after: this.retryAfterSeconds } : {}),
        ...(this.param !== undefined ? { param: this.param } : {}),
        ...(this.requiredPlan !== undefined ? { required_plan: this.requiredPlan } : {}),
        ...(this.requestId !== undefined ? { request_id: this.requestId } : {}),
      },
    };
  }
}
