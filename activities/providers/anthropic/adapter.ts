/** The adapter for the Anthropic Messages API. */
import { postForEvents, postForJson, resolveUpstream } from '../http.ts';
import { translateEvents } from '../stream-translation.ts';
import type { ProviderAdapter, ProviderConfig } from '../types.ts';
import { messagesUrl, requestHeaders } from './api.ts';
import { toAnthropicMessagesBody } from './request.ts';
import { anthropicMessageSchema, fromAnthropicMessage } from './response.ts';
import { AnthropicStreamTranslator } from './stream.ts';

/** Creates an adapter for Anthropic (or a server speaking its Messages protocol). */
export function createAnthropicAdapter(config: ProviderConfig): ProviderAdapter {
  const upstream = resolveUpstream(config);
  const url = messagesUrl(config.baseUrl);
  const headers = requestHeaders(config.apiKey);
  return {
    provider: config.provider,
    protocol: 'anthropic',
    async generate(request, options) {
      const body = toAnthropicMessagesBody(request, false);
      const message = await postForJson(
        upstream,
        { url, headers, body, onHeaders: options?.onHeaders },
        anthropicMessageSchema,
        options?.signal,
      );
      return fromAnthropicMessage(message);
    },
    stream(request, options) {
      const body = toAnthropicMessagesBody(request, true);
      const events = postForEvents(upstream, { url, headers, body, onHeaders: options?.onHeaders }, options?.signal);
      return translateEvents(events, new AnthropicStreamTranslator(config.provider));
    },
  };
}
