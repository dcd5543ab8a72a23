/**
 * One attempt of an embedding request on one candidate: holds its credits (unless the API held attempt 1), calls the
 * provider's embedding adapter or the local engine, records the outcome in the shared circuit breaker, hands the
 * vectors over, and settles or releases the credits. The embedding workflow's local activity runs it.
 *
 * Vectors never go into workflow history. When the caller waits in this process (the API that started the workflow
 * eagerly, or EmbeddingService.embed called here) they are handed over in memory (EmbeddingHandover); otherwise (the
 * workflow task went to another worker) they are written to the stream journal under the request id, where the
 * caller reads them once the workflow has ended, as a streamed completion is relayed from the journal.
 */
import { localEngineProviderId } from '../../common/catalogue.ts';
import type { EmbeddingUsage } from '../../common/embeddings.ts';
import { creditsFor } from '../../common/credits.ts';
import type { LoadedCatalogue, ProviderEndpoint } from '../../config/load-catalogue.ts';
import type { CreditLedger } from '../credits/credit-ledger.ts';
import { createEmbeddingAdapter, type EmbeddingAdapter } from '../providers/index.ts';
import { ProviderError } from '../providers/types.ts';
import type { CircuitBreaker } from '../routing/circuit-breaker.ts';
import type { StreamJournal } from '../streaming/stream-journal.ts';
import type { EmbeddingAttemptInput, EmbeddingAttemptOutcome } from '../../common/embedding-failover.ts';
import type { LocalEmbeddingEngine } from './local-engine.ts';
import { LocalEngineError } from './local-engine.ts';

/** One attempt on one candidate (common/embedding-failover.ts). */
export type EmbeddingCallInput = EmbeddingAttemptInput;

export type EmbeddingCallOutcome =
  EmbeddingAttemptOutcome | { outcome: 'failed'; error: ProviderError; latencyMs: number; ledgerDone?: boolean };

/** Vectors in the journal are written this many to a row (a row of 64 × 3,072 floats is 1 MB of base64). */
const vectorsPerJournalRow = 64;

/** What a successful attempt hands to the caller waiting in this process. */
export interface HandedEmbeddings {
  model: string;
  provider: string;
  dimensions: number;
  vectors: Float32Array[];
  usage: EmbeddingUsage;
  usageEstimated: boolean;
}

/** Callers in this process waiting for a request's vectors. */
export class EmbeddingHandover {
  private readonly waiting = new Map<string, (answer: HandedEmbeddings) => void>();

  /** Registers the caller before the workflow starts; `answer` resolves when an attempt in this process succeeds. */
  expect(requestId: string): { answer: Promise<HandedEmbeddings>; cancel(): void } {
    const answer = new Promise<HandedEmbeddings>((resolve) => this.waiting.set(requestId, resolve));
    return { answer, cancel: () => this.waiting.delete(requestId) };
  }

  /** Gives the answer to the caller waiting here; false when none is (it is in another process). */
  deliver(requestId: string, answer: HandedEmbeddings): boolean {
    const resolve = this.waiting.get(requestId);
    if (!resolve) return false;
    this.waiting.delete(requestId);
    resolve(answer);
    return true;
  }
}

export interface EmbeddingCallDependencies {
  catalogue: LoadedCatalogue;
  breaker: CircuitBreaker;
  ledger: CreditLedger;
  journal: StreamJournal;
  handover: EmbeddingHandover;
  localEngine: LocalEmbeddingEngine;
  providerTimeouts?: { connectTimeoutMs?: number; requestTimeoutMs?: number };
  /** Told every attempt's outcome (metrics). */
  observe?: (provider: string, outcome: EmbeddingCallOutcome['outcome']) => void;
}

export class EmbeddingCalls {
  private readonly dependencies: EmbeddingCallDependencies;
  private readonly adapters = new Map<string, EmbeddingAdapter | null>();

  constructor(dependencies: EmbeddingCallDependencies) {
    this.dependencies = dependencies;
  }

  async run(input: EmbeddingCallInput, signal: AbortSignal): Promise<EmbeddingCallOutcome> {
    const outcome = (await this.reserve(input)) ?? (await this.attempt(input, signal));
    outcome.ledgerDone = await this.closeLedger(input, outcome);
    this.dependencies.observe?.(input.candidate.provider, outcome.outcome);
    return outcome;
  }

  /** Holds the attempt's credits at this candidate's rate; returns the outcome that ends it early, or null. */
  private async reserve(input: EmbeddingCallInput): Promise<EmbeddingCallOutcome | null> {
    const { candidate } = input;
    if (!input.reserve || !input.metered || candidate.creditRate === undefined) return null;
    const amount = creditsFor(input.promptTokens, candidate.creditRate);
    const reservation = await this.dependencies.ledger.reserve({
      userId: input.userId,
      workflowId: input.workflowId,
      attempt: input.attempt,
      amount,
      model: candidate.model,
    });
    if (reservation.ok) return null;
    return {
      outcome: 'skipped',
      insufficientCredits: true,
      reason: `insufficient credits for ${candidate.model}: needs ${amount}, ${reservation.available} available`,
    };
  }

  private async closeLedger(input: EmbeddingCallInput, outcome: EmbeddingCallOutcome): Promise<boolean> {
    const { candidate } = input;
    if (!input.metered || candidate.creditRate === undefined) return true;
    const key = { userId: input.userId, workflowId: input.workflowId, attempt: input.attempt };
    try {
      if (outcome.outcome === 'succeeded') {
        await this.dependencies.ledger.settle({
          ...key,
          amount: creditsFor(outcome.usage.total_tokens, candidate.creditRate),
          model: candidate.model,
          promptTokens: outcome.usage.prompt_tokens,
          completionTokens: 0,
          estimated: outcome.usageEstimated,
        });
      } else {
        await this.dependencies.ledger.release(key);
      }
      return true;
    } catch {
      return false;
    }
  }

  private async attempt(input: EmbeddingCallInput, signal: AbortSignal): Promise<EmbeddingCallOutcome> {
    const { candidate } = input;
    const { breaker } = this.dependencies;
    const local = candidate.provider === localEngineProviderId;
    let adapter: EmbeddingAdapter | null = null;
    if (!local) {
      const endpoint = this.dependencies.catalogue.endpoints.get(candidate.provider);
      if (!endpoint) return { outcome: 'skipped', reason: `provider ${candidate.provider} has no key` };
      adapter = this.adapterFor(endpoint);
      if (!adapter) return { outcome: 'skipped', reason: `provider ${candidate.provider} has no embeddings` };
      if (candidate.probe && !(await breaker.claimProbe(candidate.provider))) {
        return { outcome: 'skipped', reason: 'circuit open; another replica holds the half-open probe' };
      }
    }
    const startedAt = performance.now();
    try {
      let vectors: Float32Array[];
      let promptTokens: number | null = null;
      if (adapter) {
        const response = await adapter.embed(
          { model: candidate.upstreamModel, texts: input.texts, dimensions: input.dimensions, user: input.user },
          { signal },
        );
        vectors = response.vectors;
        promptTokens = response.promptTokens;
        await breaker.recordSuccess(candidate.provider);
      } else {
        vectors = await this.localEmbed(input.texts, signal);
        // The local engine's usage is the gateway's own count: there is no other.
        promptTokens = input.promptTokens;
      }
      if (vectors.length !== input.texts.length) {
        throw new ProviderError({
          provider: candidate.provider,
          kind: 'malformed',
          message: `${candidate.provider}: ${vectors.length} vectors for ${input.texts.length} inputs`,
        });
      }
      const tokens = promptTokens ?? input.promptTokens;
      const usage = { prompt_tokens: tokens, total_tokens: tokens };
      const dimensions = vectors[0]?.length ?? 0;
      const usageEstimated = promptTokens === null;
      const { model, provider } = candidate;
      await this.handOver(input.requestId, { model, provider, dimensions, vectors, usage, usageEstimated });
      return {
        outcome: 'succeeded',
        latencyMs: Math.round(performance.now() - startedAt),
        usage,
        usageEstimated,
        count: vectors.length,
        dimensions,
      };
    } catch (error) {
      const providerError =
        error instanceof ProviderError
          ? error
          : new ProviderError({ provider: candidate.provider, kind: 'network', message: String(error) });
      if (!local) {
        if (providerError.retryable) await breaker.recordFailure(candidate.provider, providerError.message);
        else if (candidate.probe) await breaker.recordSuccess(candidate.provider);
      }
      return { outcome: 'failed', error: providerError, latencyMs: Math.round(performance.now() - startedAt) };
    }
  }

  /** The local engine's failures as provider failures: a deadline is a timeout; a thread that died, a network fault. */
  private async localEmbed(texts: string[], signal: AbortSignal): Promise<Float32Array[]> {
    try {
      return await this.dependencies.localEngine.embed(texts, signal);
    } catch (error) {
      if (!(error instanceof LocalEngineError)) throw error;
      const kind = error.kind === 'deadline' ? 'timeout' : error.kind === 'cancelled' ? 'aborted' : 'network';
      throw new ProviderError({ provider: localEngineProviderId, kind, message: error.message });
    }
  }

  /** In memory to a caller waiting here, else into the journal for the caller in another process. */
  private async handOver(requestId: string, answer: HandedEmbeddings): Promise<void> {
    if (this.dependencies.handover.deliver(requestId, answer)) return;
    const { vectors } = answer;
    const writer = this.dependencies.journal.writer(requestId);
    const dimensions = vectors[0]?.length ?? 0;
    for (let first = 0; first < vectors.length; first += vectorsPerJournalRow) {
      const rows = vectors.slice(first, first + vectorsPerJournalRow);
      const packed = new Float32Array(rows.length * dimensions);
      rows.forEach((vector, index) => packed.set(vector, index * dimensions));
      const data = Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength).toString('base64');
      writer.append({ seq: first / vectorsPerJournalRow, event: { type: 'vectors', first, dimensions, data } });
    }
    await writer.close();
  }

  private adapterFor(endpoint: ProviderEndpoint): EmbeddingAdapter | null {
    if (!this.adapters.has(endpoint.provider)) {
      this.adapters.set(
        endpoint.provider,
        createEmbeddingAdapter({ ...endpoint, ...this.dependencies.providerTimeouts }),
      );
    }
    return this.adapters.get(endpoint.provider)!;
  }
}

/**
 * Vectors a caller in another process reads back from the journal (see the file comment), deleting them: they are
 * read once, and a request's vectors may be megabytes.
 */
export async function vectorsFromJournal(journal: StreamJournal, requestId: string): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (const { event } of await journal.read(requestId)) {
    if (event.type !== 'vectors') continue;
    const bytes = Buffer.from(event.data, 'base64');
    const values = new Float32Array(bytes.length / 4);
    new Uint8Array(values.buffer).set(bytes);
    for (let offset = 0; offset < values.length; offset += event.dimensions) {
      vectors[event.first + offset / event.dimensions] = values.subarray(offset, offset + event.dimensions);
    }
  }
  await journal.remove(requestId);
  return vectors;
}
