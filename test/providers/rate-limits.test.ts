/**
 * A provider's limits as its answers state them (activities/providers/rate-limits.ts): OpenAI's `x-ratelimit-*` with
 * Go durations, Anthropic's `anthropic-ratelimit-*` with RFC 3339 times, nothing from Gemini or from a header in a form
 * not understood.
 */
import { describe, expect, it } from '@jest/globals';
import { durationMs, readRateLimits } from '../../activities/providers/rate-limits.ts';

const now = Date.parse('2026-11-29T10:00:00Z');

describe('provider rate limits', () => {
  it('reads OpenAI’s headers, its resets as Go durations', () => {
    const headers = new Headers({
      'x-ratelimit-limit-requests': '5000',
      'x-ratelimit-remaining-requests': '4999',
      'x-ratelimit-reset-requests': '12ms',
      'x-ratelimit-limit-tokens': '160000',
      'x-ratelimit-remaining-tokens': '159976',
      'x-ratelimit-reset-tokens': '6m0s',
    });
    expect(readRateLimits('openai', headers, now)).toEqual({
      requests: { limit: 5000, remaining: 4999, resetAt: now + 12 },
      tokens: { limit: 160000, remaining: 159976, resetAt: now + 360_000 },
    });
    expect([durationMs('1.5s'), durationMs('1h2m3s'), durationMs('850ms'), durationMs('20us')]).toEqual([
      1500, 3_723_000, 850, 0.02,
    ]);
    expect([durationMs('soon'), durationMs('5'), durationMs('1s later')]).toEqual([undefined, undefined, undefined]);
  });

  it('reads Anthropic’s headers, its resets as times', () => {
    const headers = new Headers({
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2026-11-29T10:00:30Z',
    });
    expect(readRateLimits('anthropic', headers, now)).toEqual({
      requests: { limit: 50, remaining: 0, resetAt: now + 30_000 },
    });
  });

  it('reads nothing where nothing is stated, or stated in a form not understood', () => {
    expect(readRateLimits('gemini', new Headers({ 'x-ratelimit-limit-requests': '5' }), now)).toBeNull();
    expect(readRateLimits('openai', new Headers(), now)).toBeNull();
    const odd = new Headers({
      'x-ratelimit-limit-requests': 'many',
      'x-ratelimit-remaining-requests': '3',
      'x-ratelimit-reset-requests': '1s',
    });
    expect(readRateLimits('openai', odd, now)).toBeNull();
  });
});
