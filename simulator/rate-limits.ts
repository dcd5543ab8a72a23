/**
 * A provider's request limit, as the real APIs keep one per key and tell it on every answer: a number of requests per
 * window (a fixed window here, starting with its first request), the state sent in the protocol's own headers, and a
 * 429 with Retry-After once the window's requests are spent. Set through the control API (`PUT
 * /_simulator/rate-limits`); none by default.
 *
 * - OpenAI-compatible: `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests`
 *   (the time until the window resets, as a Go duration such as `1.5s` or `850ms`), as OpenAI and Groq send them.
 * - Anthropic: `anthropic-ratelimit-requests-limit`, `-remaining`, `-reset` (an RFC 3339 time).
 * - Gemini sends no such headers (only Retry-After on a 429), as Google's API does not.
 */
import { z } from 'zod';
import { protocols, type Protocol } from './faults.ts';

export const rateLimitsSchema = z.strictObject({
  limits: z.array(
    z.strictObject({
      protocol: z.enum(protocols),
      /** Requests each window takes. */
      requests: z.number().int().positive(),
      window_ms: z.number().int().positive(),
    }),
  ),
});

export type RateLimitSettings = z.infer<typeof rateLimitsSchema>['limits'];

interface Window {
  limit: number;
  windowMs: number;
  startedAt: number;
  used: number;
}

export type Admission =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; headers: Record<string, string>; retryAfterSeconds: number };

export class RateLimits {
  private windows = new Map<Protocol, Window>();
  /** Requests answered 429 because their window was spent, since the last reset of the request log. */
  refused = 0;

  set(limits: RateLimitSettings): void {
    this.windows = new Map(
      limits.map((limit) => [
        limit.protocol,
        { limit: limit.requests, windowMs: limit.window_ms, startedAt: 0, used: 0 },
      ]),
    );
  }

  clear(): void {
    this.windows.clear();
  }

  /** Counts a request of `protocol` against its window: whether it may be answered, and the headers to send. */
  admit(protocol: Protocol, now = Date.now()): Admission {
    const window = this.windows.get(protocol);
    if (!window) return { ok: true, headers: {} };
    if (now >= window.startedAt + window.windowMs) {
      window.startedAt = now;
      window.used = 0;
    }
    const ok = window.used < window.limit;
    if (ok) window.used += 1;
    else this.refused += 1;
    const resetAt = window.startedAt + window.windowMs;
    const headers = limitHeaders(protocol, window.limit, window.limit - window.used, resetAt, now);
    if (ok) return { ok, headers };
    return { ok, headers, retryAfterSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)) };
  }
}

function limitHeaders(
  protocol: Protocol,
  limit: number,
  remaining: number,
  resetAt: number,
  now: number,
): Record<string, string> {
  if (protocol === 'openai') {
    return {
      'x-ratelimit-limit-requests': String(limit),
      'x-ratelimit-remaining-requests': String(remaining),
      'x-ratelimit-reset-requests': goDuration(resetAt - now),
    };
  }
  if (protocol === 'anthropic') {
    return {
      'anthropic-ratelimit-requests-limit': String(limit),
      'anthropic-ratelimit-requests-remaining': String(remaining),
      'anthropic-ratelimit-requests-reset': new Date(resetAt).toISOString(),
    };
  }
  return {};
}

/** Milliseconds as Go prints a duration (`850ms`, `1.5s`, `2m3s`), the form of OpenAI's reset headers. */
function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = (ms - minutes * 60_000) / 1000;
  const text = `${Number(seconds.toFixed(3))}s`;
  return minutes > 0 ? `${minutes}m${text}` : text;
}
