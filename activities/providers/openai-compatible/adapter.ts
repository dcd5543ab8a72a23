/** The adapter for servers speaking the OpenAI Chat Completions protocol. */
import { postForEvents, postForJson, resolveUpstream } from '../http.ts';
import { translateEvents } from '../stream-translation.ts';
import type { ProviderAdapter, ProviderConfig } from '../types.ts';
import { chatCompletionsUrl, requestHeaders } from './api.ts';
import { toOpenAIChatBody } from './request.ts';
import { fromOpenAIChatResponse, openAIChatResponseSchema } from './response.ts';
import { OpenAIStreamTranslator } from './stream.ts';

/** Creates an adapter for OpenAI, DeepSeek, Groq, DashScope or a self-hosted OpenAI-compatible server. */
export function createOpenAICompatibleAdapter(config: ProviderConfig): ProviderAdapter {
  const upstream = resolveUpstream(config);
  const url = chatCompletionsUrl(config.baseUrl);
  const headers = requestHeaders(config.apiKey);
  return {
    provider: config.provider,
    protocol: 'openai',
    async generate(request, options) {
      const body = toOpenAIChatBody(config.provider, request, false);
      const response = await postForJson(
        upstream,
        { url, headers, body, onHeaders: options?.onHeaders },
        openAIChatResponseSchema,
        options?.signal,
      );
      return fromOpenAIChatResponse(response);
    },
    stream(request, options) {
      const body = toOpenAIChatBody(config.provider, request, true);
      const events = postForEvents(upstream, { url, headers, body, onHeaders: options?.onHeaders }, options?.signal);
      return translateEvents(events, new OpenAIStreamTranslator(config.provider));
    },
  };
}
