/** Where and how to call the Gemini API (generativelanguage.googleapis.com). */
import { joinUrl } from '../http.ts';

/** The generateContent URL, or its SSE streaming twin; the base URL has no version path. */
export function generateContentUrl(baseUrl: string, model: string, stream: boolean): string {
  // Catalogues sometimes keep Google's resource name (`models/gemini-2.5-flash`); the path adds the prefix itself.
  const modelId = encodeURIComponent(model.replace(/^models\//, ''));
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return joinUrl(baseUrl, `v1beta/models/${modelId}:${method}`);
}

/** Gemini takes the API key in a header (kept out of URLs, and so out of logs). */
export function requestHeaders(apiKey: string): Record<string, string> {
  return { 'x-goog-api-key': apiKey };
}
