/** Where and how to call an OpenAI-compatible server (OpenAI, DeepSeek, Groq, DashScope, Ollama, vLLM, llama.cpp). */
import { joinUrl } from '../http.ts';

/** The chat-completions URL; the base URL already includes the version path (`https://api.openai.com/v1`). */
export function chatCompletionsUrl(baseUrl: string): string {
  return joinUrl(baseUrl, 'chat/completions');
}

/** Bearer authentication; a self-hosted server configured without a key gets no Authorization header. */
export function requestHeaders(apiKey: string): Record<string, string> {
  return apiKey === '' ? {} : { authorization: `Bearer ${apiKey}` };
}
