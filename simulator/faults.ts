/** Faults on demand: rules registered through the control API and taken by matching requests. */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';

/** The chat protocols, then the hosted media APIs (simulator/services/media.ts). */
export const protocols = ['openai', 'anthropic', 'gemini', 'openai-media', 'elevenlabs', 'replicate'] as const;
export type Protocol = (typeof protocols)[number];

export const faultSchema = z.strictObject({
  /** Answer with this HTTP status and the protocol's error body instead of a reply. */
  status: z.number().int().min(400).max(599).optional(),
  /** Retry-After header seconds sent with `status`. */
  retry_after: z.number().int().nonnegative().optional(),
  /** Delay before the response headers. */
  latency_ms: z.number().int().nonnegative().optional(),
  /** Stop sending for `stall_ms` after this many tokens (non-streaming: between headers and body). */
  stall_after_tokens: z.number().int().nonnegative().optional(),
  stall_ms: z.number().int().nonnegative().optional(),
  /** Destroy the socket after this many tokens (non-streaming: halfway through the body). */
  cut_after_tokens: z.number().int().nonnegative().optional(),
  /** Send an unparsable data line after this many tokens (non-streaming: a truncated JSON body). */
  malformed_after_tokens: z.number().int().nonnegative().optional(),
  /** Omit usage from the stream and the body. */
  no_usage: z.boolean().optional(),
});

export const faultRuleSchema = z.strictObject({
  match: z.strictObject({ model: z.string().optional(), protocol: z.enum(protocols).optional() }).optional(),
  /** How many matching requests the fault applies to; unlimited when absent. */
  times: z.number().int().positive().optional(),
  fault: faultSchema,
});

export type Fault = z.infer<typeof faultSchema>;
export type FaultRule = z.infer<typeof faultRuleSchema>;

/** A stall without a duration is meant as a hang; a minute outlasts any idle timeout under test. */
export const defaultStallMs = 60_000;

interface RegisteredRule {
  id: string;
  rule: FaultRule;
  remaining: number | undefined;
}

/** The registered fault rules, in the order they were added; the first match wins. */
export class FaultRegistry {
  private rules: RegisteredRule[] = [];

  add(rule: FaultRule): string {
    const id = `fault_${randomUUID()}`;
    this.rules.push({ id, rule, remaining: rule.times });
    return id;
  }

  clear(): void {
    this.rules = [];
  }

  list(): Array<FaultRule & { id: string; remaining: number | null }> {
    return this.rules.map(({ id, rule, remaining }) => ({ id, ...rule, remaining: remaining ?? null }));
  }

  /** The fault for a request, counting one use of its rule; undefined when no rule matches. */
  take(protocol: Protocol, model: string): Fault | undefined {
    const registered = this.rules.find(({ rule }) => {
      const match = rule.match ?? {};
      return (
        (match.model === undefined || match.model === model) &&
        (match.protocol === undefined || match.protocol === protocol)
      );
    });
    if (registered === undefined) return undefined;
    if (registered.remaining !== undefined) {
      registered.remaining -= 1;
      if (registered.remaining === 0) this.rules = this.rules.filter((rule) => rule !== registered);
    }
    return registered.rule.fault;
  }
}
