/** The Messages door's error dialect: Anthropic's types, statuses and envelope for each of the platform's errors. */
import type { ErrorType } from '../../errors.ts';

/**
 * Anthropic's error type and status for each of the platform's (docs.claude.com/en/api/errors). The platform's own
 * reason stays in `message`. Where Anthropic has no such status the nearest type keeps the platform's status (402
 * `billing_error`, as Anthropic answers a spent balance; 409 and 415 `invalid_request_error`, which Anthropic uses for
 * "other 4XX"; 502 `api_error`). An outage of the platform's own parts (503) is Anthropic's 529 `overloaded_error`,
 * which its SDKs retry after Retry-After.
 */
const anthropicErrors: Record<ErrorType, { type: string; status: number }> = {
  invalid_request: { type: 'invalid_request_error', status: 400 },
  authentication_error: { type: 'authentication_error', status: 401 },
  insufficient_credits: { type: 'billing_error', status: 402 },
  permission_denied: { type: 'permission_error', status: 403 },
  not_found: { type: 'not_found_error', status: 404 },
  model_not_found: { type: 'not_found_error', status: 404 },
  conflict: { type: 'invalid_request_error', status: 409 },
  payload_too_large: { type: 'request_too_large', status: 413 },
  unsupported_media_type: { type: 'invalid_request_error', status: 415 },
  rate_limit_exceeded: { type: 'rate_limit_error', status: 429 },
  internal_error: { type: 'api_error', status: 500 },
  upstream_error: { type: 'api_error', status: 502 },
  service_unavailable: { type: 'overloaded_error', status: 529 },
};

/** Anthropic's error envelope, `{type: "error", error: {type, message}, request_id?}`. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  /** With a 529 whose request may still complete: the id to look it up by (GET /api/v1/requests/{id}). */
  request_id?: string;
}

/** An error as the Messages door answers it: Anthropic's status and envelope, the platform's message. */
export function anthropicError(error: { type: ErrorType; message: string; requestId?: string }): {
  status: number;
  body: AnthropicErrorBody;
} {
  const mapped = anthropicErrors[error.type];
  return {
    status: mapped.status,
    body: {
      type: 'error',
      error: { type: mapped.type, message: error.message },
      ...(error.requestId !== undefined ? { request_id: error.requestId } : {}),
    },
  };
}
