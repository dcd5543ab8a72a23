/** The provider router's entry: one adapter per wire protocol, chosen by configuration. */
import { createAnthropicAdapter } from './anthropic/adapter.ts';
import { createGeminiAdapter } from './gemini/adapter.ts';
import { createGeminiEmbeddingAdapter } from './gemini/embeddings.ts';
import { createOpenAICompatibleAdapter } from './openai-compatible/adapter.ts';
import { createOpenAIEmbeddingAdapter } from './openai-compatible/embeddings.ts';
import type { EmbeddingAdapter, ProviderAdapter, ProviderConfig } from './types.ts';

export { defaultTimeouts } from './http.ts';
export { ProviderError } from './types.ts';
export type {
  CallOptions,
  EmbeddingAdapter,
  EmbeddingRequest,
  EmbeddingResponse,
  ProviderAdapter,
  ProviderConfig,
  ProviderFailureKind,
  ProviderRequest,
  ProviderResponse,
  WireProtocol,
} from './types.ts';

/** Creates the adapter that speaks `config.protocol` to `config.baseUrl`. */
export function createProviderAdapter(config: ProviderConfig): ProviderAdapter {
  switch (config.protocol) {
    case 'openai':
      return createOpenAICompatibleAdapter(config);
    case 'anthropic':
      return createAnthropicAdapter(config);
    case 'gemini':
      return createGeminiAdapter(config);
  }
}

/** The embedding adapter of `config.protocol`, or null for a protocol without embeddings (Anthropic's). */
export function createEmbeddingAdapter(config: ProviderConfig): EmbeddingAdapter | null {
  switch (config.protocol) {
    case 'openai':
      return createOpenAIEmbeddingAdapter(config);
    case 'gemini':
      return createGeminiEmbeddingAdapter(config);
    case 'anthropic':
      return null;
  }
}
