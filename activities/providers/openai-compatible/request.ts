/** Maps a provider-neutral request onto the Chat Completions wire body. */
import type { ChatMessage } from '../../../common/chat.ts';
import type { ProviderRequest } from '../types.ts';

/** The Chat Completions request body; fields left undefined are dropped by JSON.stringify. */
export interface OpenAIChatBody {
  model: string;
  messages: OpenAIMessage[];
  stream?: boolean;
  stream_options?: { include_usage: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  seed?: number;
  user?: string;
  presence_penalty?: number;
  frequency_penalty?: number;
  response_format?: ProviderRequest['responseFormat'];
  tools?: ProviderRequest['tools'];
  tool_choice?: ProviderRequest['toolChoice'];
  parallel_tool_calls?: boolean;
  reasoning_effort?: ProviderRequest['reasoningEffort'];
}

type OpenAIMessage = Exclude<ChatMessage, { role: 'developer' }>;

/** Builds the request body; `stream` adds the options that make the server report usage at the end. */
export function toOpenAIChatBody(provider: string, request: ProviderRequest, stream: boolean): OpenAIChatBody {
  const hasTools = request.tools !== undefined && request.tools.length > 0;
  return {
    model: request.model,
    messages: request.messages.map(toOpenAIMessage),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    // OpenAI's reasoning models reject `max_tokens`; the other compatible servers do not all know its successor.
    ...(provider === 'openai' ? { max_completion_tokens: request.maxTokens } : { max_tokens: request.maxTokens }),
    temperature: request.temperature,
    top_p: request.topP,
    stop: request.stop !== undefined && request.stop.length > 0 ? request.stop : undefined,
    seed: request.seed,
    user: request.user,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    response_format: request.responseFormat,
    tools: hasTools ? request.tools : undefined,
    // Servers reject tool settings without tools (OpenAI: "tool_choice is only allowed when tools are specified").
    tool_choice: hasTools ? request.toolChoice : undefined,
    parallel_tool_calls: hasTools ? request.parallelToolCalls : undefined,
    // Only when the caller set it (and the model reasons, see provider-calls.ts): OpenAI rejects it otherwise.
    reasoning_effort: request.reasoningEffort,
  };
}

/**
 * `developer` becomes `system`: OpenAI treats the two alike, while DeepSeek, Groq, Ollama and older vLLM
 * reject the newer role.
 */
function toOpenAIMessage(message: ChatMessage): OpenAIMessage {
  return message.role === 'developer' ? { ...message, role: 'system' } : message;
}
