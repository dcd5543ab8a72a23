/**
 * The Messages door's two translations: an Anthropic request into the platform's one completion request (what
 * `/v1/chat/completions` runs: the same router, failover, ledger and workflow), and the completion's answer back
 * into Anthropic's Message. Decisions, each also in docs/client-apis.md:
 * - `tool_result` blocks become tool messages, in order, before the rest of their user message (Anthropic puts them
 *   first); an `is_error` result is marked `Error: ` so any model sees it failed. Thinking blocks sent back are
 *   dropped: the platform does not sign reasoning, and no provider takes another's.
 * - `thinking: {type: enabled, budget_tokens}` asks for the largest reasoning effort whose budget fits in it (low
 *   1,024, medium 8,192, high 24,576 tokens: activities/providers/reasoning.ts); `adaptive` is medium;
 *   `output_config.effort` maps by name (xhigh and max are high). A model without reasoning ignores it, as on
 *   `/v1/chat/completions`.
 * - `output_config.format` (JSON schema) is the platform's `response_format: json_schema`.
 * - `stop_reason` from the platform's finish reason: stop → end_turn, length → max_tokens, tool_calls → tool_use,
 *   content_filter → refusal; `stop_sequence` (with the sequence) where the serving provider says a stop sequence
 *   ended the answer (Anthropic does; OpenAI's and Gemini's APIs do not tell it from a natural end, so an answer they
 *   stopped at a sequence is `end_turn` with `stop_sequence: null`). Cache token counts are 0: the platform does not
 *   cache prompts.
 */
import type {
  ChatCompletionRequest,
  ChatMessage,
  ContentPart,
  FinishReason,
  ReasoningEffort,
  Tool,
  ToolChoice,
  Usage,
} from '../../chat.ts';
import type { CompletionMessage } from '../../completion.ts';
import { ApiError } from '../../errors.ts';
import type {
  AnthropicMessage,
  AnthropicMessageParam,
  AnthropicUsage,
  CountTokensRequest,
  MessagesRequest,
  ResponseContentBlock,
  StopReason,
} from './schema.ts';

/** The platform's completion request for an Anthropic one (`count_tokens` passes one without max_tokens). */
export function toCompletionRequest(request: MessagesRequest | CountTokensRequest): ChatCompletionRequest {
  const full = request as Partial<MessagesRequest>;
  if (request.thinking?.type === 'enabled' && full.max_tokens !== undefined) {
    if (request.thinking.budget_tokens >= full.max_tokens) {
      throw new ApiError('invalid_request', '`max_tokens` must be greater than `thinking.budget_tokens`', {
        param: 'thinking.budget_tokens',
      });
    }
  }
  const messages: ChatMessage[] = [];
  const systemText = request.system === undefined ? '' : textOf(request.system);
  if (systemText !== '') messages.push({ role: 'system', content: systemText });
  request.messages.forEach((message, index) => messages.push(...toChatMessages(message, index)));
  const effort = reasoningEffort(request);
  const format = request.output_config?.format;
  const choice = request.tool_choice;
  return {
    model: request.model,
    messages,
    ...(full.stream !== undefined ? { stream: full.stream } : {}),
    ...(full.max_tokens !== undefined ? { max_tokens: full.max_tokens } : {}),
    ...(full.temperature !== undefined ? { temperature: full.temperature } : {}),
    ...(full.top_p !== undefined ? { top_p: full.top_p } : {}),
    ...(full.top_k !== undefined ? { top_k: full.top_k } : {}),
    ...(full.stop_sequences?.length ? { stop: full.stop_sequences } : {}),
    ...(full.metadata?.user_id ? { user: full.metadata.user_id } : {}),
    ...(request.tools?.length ? { tools: request.tools.map(toTool) } : {}),
    ...(choice ? { tool_choice: toToolChoice(choice) } : {}),
    ...(choice && 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use
      ? { parallel_tool_calls: false }
      : {}),
    ...(effort ? { reasoning_effort: effort } : {}),
    ...(format
      ? { response_format: { type: 'json_schema' as const, json_schema: { name: 'output', schema: format.schema } } }
      : {}),
  };
}

function textOf(content: string | Array<{ text: string }>): string {
  return typeof content === 'string' ? content : content.map((block) => block.text).join('\n\n');
}

function toChatMessages(message: AnthropicMessageParam, index: number): ChatMessage[] {
  const { role, content } = message;
  if (typeof content === 'string') return [{ role, content }];
  const where = (block: number) => `messages.${index}.content.${block}`;
  if (role === 'system') {
    const text = content.map((block, at) => {
      if (block.type !== 'text') throw refused(where(at), `a system message carries text blocks only`);
      return block.text;
    });
    return [{ role: 'system', content: text.join('\n\n') }];
  }
  if (role === 'assistant') {
    let text = '';
    const toolCalls: NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']> = [];
    content.forEach((block, at) => {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'tool_use') {
        toolCalls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: JSON.stringify(block.input) },
        });
      } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
        throw refused(where(at), `an assistant message carries text, tool_use and thinking blocks, not ${block.type}`);
      }
    });
    return [{ role: 'assistant', content: text || null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) }];
  }
  const results: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  content.forEach((block, at) => {
    switch (block.type) {
      case 'tool_result': {
        const text = block.content === undefined ? '' : textOf(block.content);
        results.push({
          role: 'tool',
          tool_call_id: block.tool_use_id,
          content: block.is_error ? `Error: ${text}` : text,
        });
        return;
      }
      case 'text':
        parts.push({ type: 'text', text: block.text });
        return;
      case 'image':
        parts.push({
          type: 'image_url',
          image_url: {
            url:
              block.source.type === 'base64'
                ? `data:${block.source.media_type};base64,${block.source.data}`
                : block.source.url,
          },
        });
        return;
      default:
        throw refused(where(at), `a user message carries text, image and tool_result blocks, not ${block.type}`);
    }
  });
  if (parts.length === 0) return results;
  const images = parts.some((part) => part.type === 'image_url');
  const userContent = images ? parts : parts.map((part) => (part as { text: string }).text).join('');
  return [...results, { role: 'user', content: userContent }];
}

function refused(param: string, message: string): ApiError {
  return new ApiError('invalid_request', `${param}: ${message}`, { param });
}

function toTool(tool: NonNullable<MessagesRequest['tools']>[number]): Tool {
  return {
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.input_schema,
    },
  };
}

function toToolChoice(choice: NonNullable<MessagesRequest['tool_choice']>): ToolChoice {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}

/** The largest effort whose thinking budget fits in the one asked for (activities/providers/reasoning.ts). */
function reasoningEffort(request: MessagesRequest | CountTokensRequest): ReasoningEffort | undefined {
  const { thinking } = request;
  if (thinking?.type === 'enabled') {
    if (thinking.budget_tokens >= 24_576) return 'high';
    return thinking.budget_tokens >= 8192 ? 'medium' : 'low';
  }
  if (thinking?.type === 'adaptive') return 'medium';
  if (thinking?.type === 'disabled') return 'none';
  const effort = request.output_config?.effort;
  if (effort === 'xhigh' || effort === 'max') return 'high';
  return effort ?? undefined;
}

// --- the answer ---------------------------------------------------------------------------------------------------

const stopReasonOf: Record<FinishReason, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

export function stopReason(reason: FinishReason): StopReason {
  return stopReasonOf[reason];
}

export function anthropicUsage(usage: Usage): AnthropicUsage {
  return {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

/**
 * A tool call's input: its arguments parsed. Arguments that are not a JSON object are the provider's malformed
 * answer, which failover already refuses for a complete answer; should one get here, it is an upstream error.
 */
export function toolInput(name: string, args: string): Record<string, unknown> {
  try {
    const input: unknown = JSON.parse(args || '{}');
    if (input !== null && typeof input === 'object' && !Array.isArray(input)) return input as Record<string, unknown>;
  } catch {
    // Falls through to the error below.
  }
  throw new ApiError('upstream_error', `The model called ${name} with arguments that are not a JSON object`);
}

/** The Message of a completed non-streamed answer. */
export function presentMessage(
  id: string,
  answer: { model: string; message: CompletionMessage | null; finishReason: FinishReason; usage: Usage },
): AnthropicMessage {
  const content: ResponseContentBlock[] = [];
  const message = answer.message;
  if (message?.reasoning) content.push({ type: 'thinking', thinking: message.reasoning, signature: '' });
  const toolCalls = message?.toolCalls ?? [];
  if (message?.content || toolCalls.length === 0) {
    content.push({ type: 'text', text: message?.content ?? '', citations: null });
  }
  for (const call of toolCalls) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: toolInput(call.function.name, call.function.arguments),
    });
  }
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content,
    stop_reason: message?.stopSequence ? 'stop_sequence' : stopReason(answer.finishReason),
    stop_sequence: message?.stopSequence ?? null,
    stop_details: null,
    usage: anthropicUsage(answer.usage),
  };
}
