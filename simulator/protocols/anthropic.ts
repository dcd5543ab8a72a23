/** The Anthropic Messages protocol as the simulator speaks it (`POST /v1/messages`). */
import { z } from 'zod';
import { formatFromInstruction, type HistoryMessage, type ReplyPlan, type SimulationInput } from '../reply.ts';
import type { EventFrame } from '../transport.ts';
import {
  bodyModel,
  headerValue,
  simulatedId,
  type IncomingCall,
  type ParsedCall,
  type ProtocolHandler,
} from './protocol.ts';

const textBlockSchema = z.object({
  type: z.literal('text'),
  text: z.string().min(1, 'text content blocks must be non-empty'),
});

const imageBlockSchema = z.object({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.object({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string().regex(/^[A-Za-z0-9+/=]+$/, 'image data must be base64'),
    }),
    z.object({ type: z.literal('url'), url: z.url({ protocol: /^https?$/ }) }),
  ]),
});

const contentBlockSchema = z.discriminatedUnion('type', [
  textBlockSchema,
  imageBlockSchema,
  z.object({
    type: z.literal('tool_use'),
    id: z.string().min(1),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal('tool_result'),
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  }),
  // A previous answer's reasoning, sent back as received.
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
]);

const minimumThinkingBudget = 1024;

const requestSchema = z.object({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z
    .array(
      z.object({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(contentBlockSchema)]) }),
    )
    .min(1),
  system: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().positive().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.object({ user_id: z.string().optional() }).optional(),
  tools: z
    .array(
      z.object({
        name: z.string().min(1),
        description: z.string().optional(),
        input_schema: z.object({ type: z.literal('object') }).passthrough(),
      }),
    )
    .optional(),
  tool_choice: z
    .discriminatedUnion('type', [
      z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
      z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
      z.object({ type: z.literal('none') }),
      z.object({ type: z.literal('tool'), name: z.string(), disable_parallel_tool_use: z.boolean().optional() }),
    ])
    .optional(),
  thinking: z
    .discriminatedUnion('type', [
      z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(minimumThinkingBudget) }),
      z.object({ type: z.literal('adaptive') }),
      z.object({ type: z.literal('disabled') }),
    ])
    .optional(),
});

type MessagesRequest = z.infer<typeof requestSchema>;
type ContentBlock = z.infer<typeof contentBlockSchema>;

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/** Speaks Anthropic's Messages protocol. */
export const anthropicProtocol: ProtocolHandler = {
  protocol: 'anthropic',
  modelOf: (call) => bodyModel(call.body),
  authenticationError: (call) =>
    headerValue(call.headers, 'x-api-key') === undefined ? 'x-api-key header is required' : undefined,
  parse: parseMessagesRequest,
  errorBody: (status, message) => ({
    type: 'error',
    error: { type: errorTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
  }),
  renderBody: renderMessage,
  renderEvents: renderMessageEvents,
};

function parseMessagesRequest(call: IncomingCall): ParsedCall {
  if (headerValue(call.headers, 'anthropic-version') === undefined) {
    return { ok: false, status: 400, message: 'anthropic-version: header is required' };
  }
  const parsed = requestSchema.safeParse(call.body);
  if (!parsed.success) return { ok: false, status: 400, message: z.prettifyError(parsed.error) };
  const thinkingError = thinkingConflict(parsed.data);
  if (thinkingError !== undefined) return { ok: false, status: 400, message: thinkingError };
  return {
    ok: true,
    input: toSimulationInput(parsed.data),
    stream: parsed.data.stream === true ? 'sse' : false,
    includeUsage: true,
  };
}

function thinkingOn(request: MessagesRequest): boolean {
  return request.thinking !== undefined && request.thinking.type !== 'disabled';
}

/** What the real API refuses in a request with thinking on (its own messages), or undefined. */
function thinkingConflict(request: MessagesRequest): string | undefined {
  if (!thinkingOn(request)) return undefined;
  if (request.thinking?.type === 'enabled' && request.thinking.budget_tokens >= request.max_tokens) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`.';
  }
  if (request.temperature !== undefined && request.temperature !== 1) {
    return '`temperature` may only be set to 1 when thinking is enabled.';
  }
  if (request.top_p !== undefined && request.top_p < 0.95) {
    return '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled.';
  }
  if (request.top_k !== undefined) {
    return '`top_k` must be unset when thinking is enabled.';
  }
  if (request.tool_choice?.type === 'any' || request.tool_choice?.type === 'tool') {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  // Mid tool loop, the assistant turn that called the tools must come back with its signed thinking.
  const last = request.messages.at(-1);
  const assistantIndex = request.messages.length - 2;
  const assistant = request.messages[assistantIndex];
  const answersTools = last !== undefined && blocksOf(last.content).some((block) => block.type === 'tool_result');
  const first = assistant === undefined ? undefined : blocksOf(assistant.content)[0];
  if (
    answersTools &&
    assistant?.role === 'assistant' &&
    first?.type !== 'thinking' &&
    first?.type !== 'redacted_thinking'
  ) {
    return (
      `messages.${assistantIndex}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found ` +
      `\`${first?.type ?? 'nothing'}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a ` +
      'thinking block.'
    );
  }
  return undefined;
}

function blocksOf(content: string | ContentBlock[]): ContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function blockText(block: ContentBlock): string {
  if (block.type === 'text') return block.text;
  if (block.type === 'tool_use') return JSON.stringify(block.input);
  // Earlier reasoning is not read back as prompt text; an image is no text either.
  if (block.type === 'thinking' || block.type === 'redacted_thinking' || block.type === 'image') return '';
  const content = block.content ?? '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

function toSimulationInput(request: MessagesRequest): SimulationInput {
  const system =
    typeof request.system === 'string' ? request.system : (request.system ?? []).map((block) => block.text).join('');
  const blocks = request.messages.flatMap((message) => blocksOf(message.content));
  const lastBlocks = blocksOf(request.messages.at(-1)?.content ?? []);
  const toolResults = lastBlocks.filter((block) => block.type === 'tool_result');
  const lastUserText = request.messages
    .filter((message) => message.role === 'user')
    .flatMap((message) => blocksOf(message.content))
    .findLast((block) => block.type === 'text');
  const lastUserIndex = request.messages.findLastIndex(
    (message) => message.role === 'user' && blocksOf(message.content).some((block) => block.type === 'text'),
  );
  const toolRounds = request.messages
    .slice(lastUserIndex + 1)
    .filter(
      (message) => message.role === 'assistant' && blocksOf(message.content).some((block) => block.type === 'tool_use'),
    ).length;
  return {
    model: request.model,
    promptChars: system.length + blocks.reduce((sum, block) => sum + blockText(block).length, 0),
    lastTurn:
      toolResults.length > 0
        ? { kind: 'tool-result', content: toolResults.map(blockText).join('\n') }
        : { kind: 'user', text: lastUserText === undefined ? '' : blockText(lastUserText) },
    userText: lastUserText === undefined ? '' : blockText(lastUserText),
    toolRounds,
    tools: (request.tools ?? []).map((tool) => ({ name: tool.name, parameters: tool.input_schema })),
    toolChoice: toolChoiceOf(request.tool_choice),
    maxTokens: request.max_tokens,
    stop: request.stop_sequences ?? [],
    reasoning: thinkingOn(request),
    responseFormat: responseFormatOf(system),
    history: request.messages.flatMap((message): HistoryMessage[] => {
      const messageBlocks = blocksOf(message.content);
      const text = messageBlocks
        .filter((block) => block.type === 'text')
        .map(blockText)
        .join('');
      if (message.role === 'user')
        return messageBlocks.some((block) => block.type === 'text') ? [{ role: 'user', text }] : [];
      return [
        { role: 'assistant', text, toolCalls: messageBlocks.filter((block) => block.type === 'tool_use').length },
      ];
    }),
    images:
      lastUserIndex < 0
        ? 0
        : blocksOf(request.messages[lastUserIndex]!.content).filter((block) => block.type === 'image').length,
  };
}

/** Anthropic has no response_format: our adapter asks for JSON in the system prompt (see ../structured.ts). */
function responseFormatOf(system: string): SimulationInput['responseFormat'] {
  const format = formatFromInstruction(system);
  if (format === undefined) return undefined;
  return format.schema === undefined ? { kind: 'json_object' } : { kind: 'json_schema', schema: format.schema };
}

function toolChoiceOf(choice: MessagesRequest['tool_choice']): SimulationInput['toolChoice'] {
  switch (choice?.type) {
    case undefined:
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { name: choice.name };
  }
}

const stopReasons = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' } as const;

function stopReasonOf(plan: ReplyPlan): string {
  return plan.stopSequence === null ? stopReasons[plan.finish] : 'stop_sequence';
}

function toolInput(plan: Extract<ReplyPlan, { kind: 'tool-call' }>): Record<string, unknown> {
  // A tool_use cut off by max_tokens has no complete input; Anthropic then reports an empty object.
  return plan.complete ? plan.arguments : {};
}

/** An opaque stand-in for the signature that authenticates a thinking block (stable for the same reasoning). */
function thinkingSignature(plan: ReplyPlan): string {
  return Buffer.from(`simulated thinking signature: ${plan.reasoning.join('')}`).toString('base64');
}

function renderMessage(plan: ReplyPlan, input: SimulationInput, options: { includeUsage: boolean }): unknown {
  const thinking =
    plan.reasoning.length > 0
      ? [{ type: 'thinking', thinking: plan.reasoning.join(''), signature: thinkingSignature(plan) }]
      : [];
  const answer =
    plan.kind === 'text'
      ? plan.tokens.length === 0
        ? []
        : [{ type: 'text', text: plan.tokens.join('') }]
      : [{ type: 'tool_use', id: `toolu_${simulatedId()}`, name: plan.name, input: toolInput(plan) }];
  const content = [...thinking, ...answer];
  return {
    id: `msg_${simulatedId()}`,
    type: 'message',
    role: 'assistant',
    model: input.model,
    content,
    stop_reason: stopReasonOf(plan),
    stop_sequence: plan.stopSequence,
    ...(options.includeUsage
      ? {
          usage: {
            input_tokens: plan.promptTokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: plan.completionTokens,
            service_tier: 'standard',
          },
        }
      : {}),
  };
}

function renderMessageEvents(
  plan: ReplyPlan,
  input: SimulationInput,
  options: { includeUsage: boolean },
): EventFrame[] {
  const event = (type: string, data: Record<string, unknown>, tokens = 0): EventFrame => ({
    event: type,
    data: { type, ...data },
    tokens,
  });
  const startUsage = {
    input_tokens: plan.promptTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 1,
  };
  const frames: EventFrame[] = [
    event('message_start', {
      message: {
        id: `msg_${simulatedId()}`,
        type: 'message',
        role: 'assistant',
        model: input.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        ...(options.includeUsage ? { usage: startUsage } : {}),
      },
    }),
  ];
  // A thinking block streams its text, then its signature just before it stops; the answer is the next block.
  const index = plan.reasoning.length > 0 ? 1 : 0;
  if (index === 1) {
    frames.push(event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }));
    frames.push(event('ping', {}));
    for (const token of plan.reasoning) {
      frames.push(event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: token } }, 1));
    }
    const signature = { type: 'signature_delta', signature: thinkingSignature(plan) };
    frames.push(event('content_block_delta', { index: 0, delta: signature }));
    frames.push(event('content_block_stop', { index: 0 }));
  }
  if (plan.kind === 'text') {
    frames.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    if (index === 0) frames.push(event('ping', {}));
    for (const token of plan.tokens) {
      frames.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: token } }, 1));
    }
  } else {
    const block = { type: 'tool_use', id: `toolu_${simulatedId()}`, name: plan.name, input: {} };
    frames.push(event('content_block_start', { index, content_block: block }));
    if (index === 0) frames.push(event('ping', {}));
    for (const piece of plan.argumentChunks) {
      frames.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }, 1));
    }
  }
  frames.push(event('content_block_stop', { index }));
  frames.push(
    event('message_delta', {
      delta: { stop_reason: stopReasonOf(plan), stop_sequence: plan.stopSequence },
      ...(options.includeUsage ? { usage: { output_tokens: plan.completionTokens } } : {}),
    }),
  );
  frames.push(event('message_stop', {}));
  return frames;
}
