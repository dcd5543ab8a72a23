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
