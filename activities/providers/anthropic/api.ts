/** Where and how to call the Anthropic Messages API. */
import { joinUrl } from '../http.ts';

/** The API version the request and stream shapes in this folder follow. */
const anthropicVersion = '2023-06-01';

/** The Messages URL; the base URL has no version path (`https://api.anthropic.com`). */
export function messagesUrl(baseUrl: string): string {
  return joinUrl(baseUrl, 'v1/messages');
}

/** Anthropic authenticates with `x-api-key` and requires a pinned API version on every call. */
export function requestHeaders(apiKey: string): Record<string, string> {
  return { 'x-api-key': apiKey, 'anthropic-version': anthropicVersion };
}
