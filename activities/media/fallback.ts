/**
 * Engine fallback, as completions fall over between providers: engines are tried in order, an engine whose breaker
 * is open is skipped (after its cool-down one caller wins the half-open probe), a retryable EngineError records a
 * failure and moves on to the next engine, and any other error ends the attempt (the input is at fault, not the
 * engine). The result names the engine that served it.
 *
 * The breaker is the platform's shared CircuitBreaker (activities/routing/circuit-breaker.ts, PostgreSQL-backed), which
 * satisfies `EngineBreaker` as it is; engines are keyed `media:<engine id>` so they never share a breaker with a
 * model provider of the same name (`openai`). Tests pass an in-memory implementation.
 */
import type { CircuitBreaker } from '../routing/circuit-breaker.ts';
import { EngineError } from './engine.ts';

export type EngineBreaker = Pick<
  CircuitBreaker,
  'views' | 'admission' | 'claimProbe' | 'recordSuccess' | 'recordFailure'
>;

/** The breaker key of an engine. */
export function breakerKey(engineId: string): string {
  return `media:${engineId}`;
}

export async function withFallback<Engine extends { readonly id: string }, Result>(
  engines: readonly Engine[],
  call: (engine: Engine) => Promise<Result>,
  breaker: EngineBreaker,
): Promise<{ result: Result; engine: string }> {
  if (engines.length === 0)
    throw new EngineError('media', 'no engine is configured for this request', { retryable: false });
  const views = await breaker.views();
  const failures: EngineError[] = [];
  for (const engine of engines) {
    const key = breakerKey(engine.id);
    const admission = breaker.admission(views.get(key));
    if (admission === 'open') continue;
    if (admission === 'probe' && !(await breaker.claimProbe(key))) continue;
    try {
      const result = await call(engine);
      await breaker.recordSuccess(key);
      return { result, engine: engine.id };
    } catch (error) {
      if (!(error instanceof EngineError) || !error.retryable) {
        // The engine answered: a refusal of this input says nothing bad about its health.
        if (error instanceof EngineError) await breaker.recordSuccess(key);
        throw error;
      }
      await breaker.recordFailure(key, error.message);
      failures.push(error);
    }
  }
  const last = failures.at(-1);
  const message =
    failures.length === 0
      ? 'every engine for this request is unavailable (circuit open)'
      : `every engine failed: ${failures.map((failure) => failure.message).join('; ')}`;
  throw new EngineError('media', message, { retryable: true, status: last?.status, cause: last });
}
