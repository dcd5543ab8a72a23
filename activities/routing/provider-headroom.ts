/**
 * What each provider's limits leave, as this process last heard it (activities/providers/rate-limits.ts), so that work
 * nobody waits on takes only that: a batch's line does not call a provider whose remaining requests or tokens, less
 * the calls this process has in flight to it, are down to the reserve kept for requests someone waits on
 * (plans.yaml `batches.provider_reserve`); it waits for the window's reset instead, and so never drives the provider
 * into 429s that its synchronous traffic would meet.
 *
 * Per process, in memory: every process that calls a provider hears its limits on each answer, and a provider's
 * remaining count is the key's, whichever process asked. Within one window the lowest remaining count heard wins (the
 * answers of calls in flight arrive in any order); past its reset, a reading counts as the whole limit again.
 */
import type { LimitState, RateLimitReading } from '../providers/rate-limits.ts';

interface Heard {
  requests?: LimitState;
  tokens?: LimitState;
  /** Calls to the provider this process has in flight, and their tokens at most. */
  inFlight: number;
  tokensInFlight: number;
}

export class ProviderHeadroom {
  private readonly providers = new Map<string, Heard>();

  private of(provider: string): Heard {
    let heard = this.providers.get(provider);
    if (!heard) {
      heard = { inFlight: 0, tokensInFlight: 0 };
      this.providers.set(provider, heard);
    }
    return heard;
  }

  /** What an answer of the provider said of its limits. */
  heard(provider: string, reading: RateLimitReading | null, now = Date.now()): void {
    if (!reading) return;
    const heard = this.of(provider);
    heard.requests = merge(heard.requests, reading.requests, now);
    heard.tokens = merge(heard.tokens, reading.tokens, now);
  }

  /** A call to the provider starts (`tokens`: its prompt and most tokens it may generate); returns its end. */
  started(provider: string, tokens: number): () => void {
    const heard = this.of(provider);
    heard.inFlight += 1;
    heard.tokensInFlight += tokens;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      heard.inFlight -= 1;
      heard.tokensInFlight -= tokens;
    };
  }

  /**
   * When a call of `tokens` that leaves `reserve` (a fraction) of the provider's limits would find them down to the
   * reserve: the time (epoch ms) its window resets. Null when the call may go (nothing heard counts as room).
   */
  shortUntil(provider: string, reserve: number, tokens: number, now = Date.now()): number | null {
    const heard = this.providers.get(provider);
    if (!heard) return null;
    let until: number | null = null;
    const requests = current(heard.requests, now);
    const tokenLimit = current(heard.tokens, now);
    if (requests) {
      const left = requests.remaining - heard.inFlight - 1;
      if (left < Math.ceil(requests.limit * reserve)) until = requests.resetAt;
    }
    if (tokenLimit) {
      const left = tokenLimit.remaining - heard.tokensInFlight - tokens;
      if (left < Math.ceil(tokenLimit.limit * reserve)) until = Math.max(until ?? 0, tokenLimit.resetAt);
    }
    return until;
  }
}

/**
 * A limit as it stands now: past its reset, the window is whole again (its whole limit remaining, less what is in
 * flight), not unknown: else every line waiting for the reset would call at once, before any answer of the new window
 * told its state, and overrun it. Such a reading's next look is a second away.
 */
function current(state: LimitState | undefined, now: number): LimitState | undefined {
  if (!state || state.resetAt > now) return state;
  return { limit: state.limit, remaining: state.limit, resetAt: now + 1_000 };
}

/** The reading to keep: a new window's, or within the same window the lower remaining count. */
function merge(kept: LimitState | undefined, heard: LimitState | undefined, now: number): LimitState | undefined {
  if (!heard) return kept;
  if (!kept || kept.resetAt <= now || heard.resetAt > kept.resetAt + 1_000) return heard;
  return heard.remaining < kept.remaining ? heard : kept;
}
