/**
 * OpenAI's embeddings method (`POST {base}/embeddings`), as OpenAI, vLLM, llama.cpp and Ollama serve it. Vectors are
 * asked for as base64 (little-endian float32: the exact values in a third of the bytes of JSON numbers); a server
 * that answers with number arrays anyway is read too.
 */
import { z } from 'zod';
import { joinUrl, malformed, postForJson, resolveUpstream } from '../http.ts';
import type { EmbeddingAdapter, ProviderConfig } from '../types.ts';
import { requestHeaders } from './api.ts';

const embeddingsResponseSchema = z.object({
  data: z.array(
    z.object({ index: z.number().int().nonnegative(), embedding: z.union([z.string(), z.array(z.number())]) }),
  ),
  usage: z.object({ prompt_tokens: z.number().int().nonnegative() }).nullish(),
});

export function createOpenAIEmbeddingAdapter(config: ProviderConfig): EmbeddingAdapter {
  const upstream = resolveUpstream(config);
  const url = joinUrl(config.baseUrl, 'embeddings');
  const headers = requestHeaders(config.apiKey);
  return {
    provider: config.provider,
    protocol: 'openai',
    async embed(request, options) {
      const body = {
        model: request.model,
        input: request.texts,
        encoding_format: 'base64',
        ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
        ...(request.user === undefined ? {} : { user: request.user }),
      };
      const response = await postForJson(upstream, { url, headers, body }, embeddingsResponseSchema, options?.signal);
      const vectors: Float32Array[] = new Array(request.texts.length);
      for (const item of response.data) {
        if (item.index >= request.texts.length) {
          throw malformed(config.provider, `embedding index ${item.index} beyond the ${request.texts.length} inputs`);
        }
        vectors[item.index] =
          typeof item.embedding === 'string' ? decodeFloat32(item.embedding) : Float32Array.from(item.embedding);
      }
      return {
        vectors: checkedVectors(config.provider, vectors, request.texts.length),
        promptTokens: response.usage?.prompt_tokens ?? null,
      };
    },
  };
}

/** Little-endian float32 values from base64 (copied, so the array is aligned whatever the buffer's offset). */
export function decodeFloat32(base64: string): Float32Array {
  const bytes = Buffer.from(base64, 'base64');
  const values = new Float32Array(bytes.length / 4);
  new Uint8Array(values.buffer).set(bytes.subarray(0, values.length * 4));
  return values;
}

/** Every input has a vector, all of one length: anything else is an upstream we cannot trust. */
export function checkedVectors(
  provider: string,
  vectors: Array<Float32Array | undefined>,
  count: number,
): Float32Array[] {
  const missing = Array.from({ length: count }, (_, index) => index).find((index) => vectors[index] === undefined);
  if (missing !== undefined) throw malformed(provider, `no embedding for input ${missing}`);
  const length = vectors[0]!.length;
  if (length === 0 || vectors.some((vector) => vector!.length !== length)) {
    throw malformed(provider, 'embeddings of different (or zero) lengths');
  }
  return vectors as Float32Array[];
}
