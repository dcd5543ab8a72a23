/** The adapter for the Gemini API's generateContent protocol. */
import { postForEvents, postForJson, resolveUpstream } from '../http.ts';
import { translateEvents } from '../stream-translation.ts';
import type { ProviderAdapter, ProviderConfig } from '../types.ts';
import { generateContentUrl, requestHeaders } from './api.ts';
import { toGeminiBody } from './request.ts';
import { fromGeminiResponse, geminiResponseSchema } from './response.ts';
import { GeminiStreamTranslator } from './stream.ts';

/** Creates an adapter for Google's Gemini API. */
export function createGeminiAdapter(config: ProviderConfig): ProviderAdapter {
  const upstream = resolveUpstream(config);
  const headers = requestHeaders(config.apiKey);
  return {
    provider: config.provider,
    protocol: 'gemini',
    async generate(request, options) {
      const url = generateContentUrl(config.baseUrl, request.model, false);
      const body = toGeminiBody(request);
      const response = await postForJson(
        upstream,
        { url, headers, body, onHeaders: options?.onHeaders },
        geminiResponseSchema,
        options?.signal,
      );
      return fromGeminiResponse(response);
    },
    stream(request, options) {
      const url = generateContentUrl(config.baseUrl, request.model, true);
      const events = postForEvents(
        upstream,
        { url, headers, body: toGeminiBody(request), onHeaders: options?.onHeaders },
        options?.signal,
      );
      return translateEvents(events, new GeminiStreamTranslator(config.provider));
    },
  };
}
