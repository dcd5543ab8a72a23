/** Maps a provider-neutral request onto the Anthropic Messages wire body. */
import { z } from 'zod';
import type { ChatMessage, ResponseFormat, Tool, ToolChoice, UserContent } from '../../../common/chat.ts';
import { thinkingBudget } from '../reasoning.ts';
import type { ProviderRequest } from '../types.ts';

/** Anthropic requires max_tokens; this applies when the caller set none. */
export const defaultMaxTokens = 4096;

type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: AnthropicImageSource }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

type AnthropicImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** The Messages request body; fields left undefined are dropped by JSON.stringify. */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: string;
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop_sequences?: string[];
  metadata?: { user_id: string };
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  thinking?: { type: 'enabled'; budget_tokens: number };
}

/** Anthropic rejects smaller thinking budgets. */
const minimumThinkingBudget = 1024;

/**
 * Builds the request body. Anthropic has no seed, penalties or response_format: the first two are dropped,
 * a JSON response format becomes a system instruction.
 */
export function toAnthropicMessagesBody(request: ProviderRequest, stream: boolean): AnthropicMessagesBody {
  const system = [
    ...request.messages.flatMap((message) =>
      message.role === 'system' || message.role === 'developer' ? [message.content] : [],
    ),
    ...jsonInstruction(request.responseFormat),
  ].filter((text) => text !== '');
  const hasTools = request.tools !== undefined && request.tools.length > 0;
  const maxTokens = request.maxTokens ?? defaultMaxTokens;
  const thinking = thinkingOf(request, maxTokens);
  // Thinking rejects a temperature other than 1, a top_p below 0.95 and top_k: the sampling knobs give way.
  const sampling: Pick<ProviderRequest, 'temperature' | 'topP' | 'topK'> = thinking === undefined ? request : {};
  return {
    model: request.model,
    max_tokens: maxTokens,
    messages: toAnthropicMessages(request.messages),
    system: system.length > 0 ? system.join('\n\n') : undefined,
    stream: stream ? true : undefined,
    // The OpenAI range is 0..2, Anthropic's 0..1: values above 1 are clamped rather than rejected upstream.
    temperature: sampling.temperature === undefined ? undefined : Math.min(sampling.temperature, 1),
    // Recent Claude models reject temperature and top_p together; temperature, the commoner knob, wins.
    top_p: sampling.temperature === undefined ? sampling.topP : undefined,
    top_k: sampling.topK,
    stop_sequences: request.stop !== undefined && request.stop.length > 0 ? request.stop : undefined,
    metadata: request.user === undefined ? undefined : { user_id: request.user },
    tools: hasTools ? request.tools?.map(toAnthropicTool) : undefined,
    tool_choice: hasTools ? toAnthropicToolChoice(request.toolChoice, request.parallelToolCalls) : undefined,
    thinking,
  };
}

/**
 * Extended thinking for a request with a reasoning effort. `max_tokens` bounds thinking and answer together (as
 * OpenAI's max_completion_tokens does, and as credit holds assume), so the budget leaves at least the minimum for
 * the answer; a max_tokens too small for both gets no thinking. Thinking is also left off when the caller forces
 * a tool (Anthropic refuses forced tool use with thinking) and in the later rounds of a tool loop: the API then
 * wants the turn's signed thinking blocks back, which the OpenAI message format has no room for. Claude does not
 * think again after a tool result anyway (without the interleaved-thinking beta).
 */
function thinkingOf(request: ProviderRequest, maxTokens: number): AnthropicMessagesBody['thinking'] {
  const wanted = thinkingBudget(request.reasoningEffort);
  if (wanted === undefined || forcesToolUse(request) || inToolLoop(request.messages)) return undefined;
  const budget = Math.min(wanted, maxTokens - minimumThinkingBudget);
  return budget < minimumThinkingBudget ? undefined : { type: 'enabled', budget_tokens: budget };
}

function forcesToolUse(request: ProviderRequest): boolean {
  const hasTools = request.tools !== undefined && request.tools.length > 0;
  return hasTools && (request.toolChoice === 'required' || typeof request.toolChoice === 'object');
}

/** True when the model already called tools since the user's last message: the answer is mid tool loop. */
function inToolLoop(messages: ChatMessage[]): boolean {
  const sinceUser = messages.slice(messages.findLastIndex((message) => message.role === 'user') + 1);
  return sinceUser.some((message) => message.role === 'assistant' && (message.tool_calls ?? []).length > 0);
}

/**
 * Converts the conversation. System messages moved to `system`; tool results become `tool_result` blocks of
 * a user turn, and consecutive turns of one role merge, as parallel tool results must share one user turn.
 */
function toAnthropicMessages(messages: ChatMessage[]): AnthropicMessage[] {
  const turns: AnthropicMessage[] = [];
  for (const message of messages) {
    const turn = toAnthropicTurn(message);
    if (turn === undefined || turn.content.length === 0) continue;
    const previous = turns.at(-1);
    if (previous?.role === turn.role) previous.content.push(...turn.content);
    else turns.push(turn);
  }
  return turns;
}

function toAnthropicTurn(message: ChatMessage): AnthropicMessage | undefined {
  switch (message.role) {
    case 'system':
    case 'developer':
      return undefined;
    case 'user':
      return { role: 'user', content: userBlocks(message.content) };
    case 'tool':
      return {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: message.content }],
      };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...textBlocks(message.content ?? ''),
          ...(message.tool_calls ?? []).map((call) => ({
            type: 'tool_use' as const,
            id: call.id,
            name: call.function.name,
            input: parseToolInput(call.function.arguments),
          })),
        ],
      };
  }
}

/** A user message's text and images, in order: an image is a base64 source, or a URL Anthropic fetches. */
function userBlocks(content: UserContent): AnthropicContentBlock[] {
  if (typeof content === 'string') return textBlocks(content);
  return content.flatMap((part): AnthropicContentBlock[] =>
    part.type === 'text' ? textBlocks(part.text) : [{ type: 'image', source: imageSource(part.image_url.url) }],
  );
}

function imageSource(url: string): AnthropicImageSource {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return data === null ? { type: 'url', url } : { type: 'base64', media_type: data[1]!, data: data[2]! };
}

/** Anthropic rejects empty text blocks. */
function textBlocks(text: string): AnthropicContentBlock[] {
  return text === '' ? [] : [{ type: 'text', text }];
}

const toolInputSchema = z.record(z.string(), z.unknown());

/**
 * `tool_use.input` must be an object. Arguments that are not a JSON object (a call cut off by max_tokens)
 * are replaced by `{}`: the conversation stays valid and the tool result explains what happened.
 */
function parseToolInput(argumentsText: string): Record<string, unknown> {
  try {
    const parsed = toolInputSchema.safeParse(JSON.parse(argumentsText));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

function toAnthropicTool(tool: Tool): AnthropicTool {
  return {
    name: tool.function.name,
    description: tool.function.description,
    input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
  };
}

function toAnthropicToolChoice(
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): AnthropicToolChoice | undefined {
  const disableParallel = parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  if (toolChoice === 'none') return { type: 'none' };
  if (toolChoice === 'required') return { type: 'any', ...disableParallel };
  if (typeof toolChoice === 'object') return { type: 'tool', name: toolChoice.function.name, ...disableParallel };
  if (toolChoice === 'auto' || parallelToolCalls === false) return { type: 'auto', ...disableParallel };
  return undefined;
}

function jsonInstruction(responseFormat: ResponseFormat | undefined): string[] {
  if (responseFormat === undefined || responseFormat.type === 'text') return [];
  const instruction = 'Respond with a single JSON object only, without any text or code fences around it.';
  const schema = responseFormat.type === 'json_schema' ? responseFormat.json_schema.schema : undefined;
  return [
    schema === undefined ? instruction : `${instruction} It must match this JSON schema: ${JSON.stringify(schema)}`,
  ];
}
