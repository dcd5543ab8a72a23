/**
 * Gemini's embedding method: `models/{model}:batchEmbedContents`, up to 100 texts a call (larger requests are sent
 * as consecutive calls). Gemini normalises only full-length vectors; a shortened one (`outputDimensionality`) is
 * normalised here, so every provider's vectors have length 1 as OpenAI's do and cosine similarity is a dot product.
 * Gemini reports no token usage for embeddings.
 */
import { z } from 'zod';
import { joinUrl, malformed, postForJson, resolveUpstream } from '../http.ts';
import { checkedVectors } from '../openai-compatible/embeddings.ts';
import type { EmbeddingAdapter, ProviderConfig } from '../types.ts';
import { requestHeaders } from './api.ts';

/** Gemini's limit of requests in one batchEmbedContents call. */
const batchLimit = 100;

const batchResponseSchema = z.object({ embeddings: z.array(z.object({ values: z.array(z.number()) })) });

export function createGeminiEmbeddingAdapter(config: ProviderConfig): EmbeddingAdapter {
  const upstream = resolveUpstream(config);
  const headers = requestHeaders(config.apiKey);
  return {
    provider: config.provider,
    protocol: 'gemini',
    async embed(request, options) {
      const modelId = request.model.replace(/^models\//, '');
      const url = joinUrl(config.baseUrl, `v1beta/models/${encodeURIComponent(modelId)}:batchEmbedContents`);
      const vectors: Float32Array[] = [];
      for (let start = 0; start < request.texts.length; start += batchLimit) {
        const texts = request.texts.slice(start, start + batchLimit);
        const body = {
          requests: texts.map((text) => ({
            model: `models/${modelId}`,
            content: { parts: [{ text }] },
            ...(request.dimensions === undefined ? {} : { outputDimensionality: request.dimensions }),
          })),
        };
        const response = await postForJson(upstream, { url, headers, body }, batchResponseSchema, options?.signal);
        if (response.embeddings.length !== texts.length) {
          throw malformed(config.provider, `${response.embeddings.length} embeddings for ${texts.length} inputs`);
        }
        for (const embedding of response.embeddings) vectors.push(normalised(embedding.values));
      }
      return { vectors: checkedVectors(config.provider, vectors, request.texts.length), promptTokens: null };
    },
  };
}

function normalised(values: number[]): Float32Array {
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0));
  return Float32Array.from(values, (value) => (norm === 0 ? value : value / norm));
}
