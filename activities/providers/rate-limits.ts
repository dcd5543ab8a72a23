/**
 * A provider's request and token limits as it states them on every answer (and on its 429s), read from its headers:
 *
 * - OpenAI-compatible servers (OpenAI, Groq, and others that copy it): `x-ratelimit-{limit,remaining,reset}-requests`
 *   and `-tokens`, the reset a Go duration from now (`1s`, `6m0s`, `12ms`).
 * - Anthropic: `anthropic-ratelimit-requests-{limit,remaining,reset}` and `anthropic-ratelimit-tokens-…`, the reset an
 *   RFC 3339 time.
 * - Gemini states none (only Retry-After on a 429): nothing is read.
 *
 * Null when the answer states no limit. Never throws: a header in a form not understood is left out.
 */
import type { WireProtocol } from './types.ts';

export interface LimitState {
  limit: number;
  remaining: number;
  /** Epoch ms when the window is whole again. */
  resetAt: number;
}

export interface RateLimitReading {
  requests?: LimitState;
  tokens?: LimitState;
}

export function readRateLimits(protocol: WireProtocol, headers: Headers, now = Date.now()): RateLimitReading | null {
  if (protocol === 'gemini') return null;
  const reading: RateLimitReading = {};
  for (const kind of ['requests', 'tokens'] as const) {
    const state =
      protocol === 'openai'
        ? limitState(
            headers.get(`x-ratelimit-limit-${kind}`),
            headers.get(`x-ratelimit-remaining-${kind}`),
            durationMs(headers.get(`x-ratelimit-reset-${kind}`)),
            now,
          )
        : limitState(
            headers.get(`anthropic-ratelimit-${kind}-limit`),
            headers.get(`anthropic-ratelimit-${kind}-remaining`),
            timeFromNow(headers.get(`anthropic-ratelimit-${kind}-reset`), now),
            now,
          );
    if (state) reading[kind] = state;
  }
  return reading.requests || reading.tokens ? reading : null;
}

function limitState(
  limit: string | null,
  remaining: string | null,
  resetInMs: number | undefined,
  now: number,
): LimitState | undefined {
  const limitValue = Number(limit);
  const remainingValue = Number(remaining);
  if (limit === null || remaining === null || resetInMs === undefined) return undefined;
  if (!Number.isFinite(limitValue) || !Number.isFinite(remainingValue) || limitValue <= 0) return undefined;
  return { limit: limitValue, remaining: Math.max(0, remainingValue), resetAt: now + resetInMs };
}

const durationUnits: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  ns: 1e-6,
};

/** A Go duration (`1h2m3.5s`, `850ms`) in milliseconds, or undefined. */
export function durationMs(text: string | null): number | undefined {
  if (!text) return undefined;
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text.trim()) return undefined;
  return parts.reduce((total, [, value, unit]) => total + Number(value) * durationUnits[unit!]!, 0);
}

function timeFromNow(text: string | null, now: number): number | undefined {
  if (!text) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
