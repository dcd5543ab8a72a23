/** The OpenAI Chat Completions protocol as the simulator speaks it (`POST /v1/chat/completions`). */
import { z } from 'zod';
import type { HistoryMessage, ReplyPlan, SimulationInput } from '../reply.ts';
import type { EventFrame } from '../transport.ts';
import {
  bodyModel,
  headerValue,
  simulatedId,
  type IncomingCall,
  type ParsedCall,
  type ProtocolHandler,
} from './protocol.ts';

/** OpenAI takes image URLs that are https or base64 data URLs of PNG, JPEG, GIF or WebP. */
const imageUrlSchema = z
  .string()
  .regex(/^(https?:\/\/\S+|data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+)$/, 'Invalid image URL');

const partSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({
    type: z.literal('image_url'),
    image_url: z.object({ url: imageUrlSchema, detail: z.enum(['auto', 'low', 'high']).optional() }),
  }),
]);

/** Content as text (parts joined) and the number of images among its parts. */
const contentSchema = z
  .union([z.string(), z.array(partSchema)])
  .nullish()
  .transform((content) =>
    Array.isArray(content)
      ? {
          text: content.map((part) => (part.type === 'text' ? part.text : '')).join(''),
          images: content.filter((part) => part.type === 'image_url').length,
        }
      : { text: content ?? '', images: 0 },
  );

const requestSchema = z.object({
  model: z.string().min(1),
  messages: z
    .array(
      z.object({
        role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
        content: contentSchema,
        tool_calls: z.array(z.object({ function: z.object({ name: z.string(), arguments: z.string() }) })).nullish(),
        tool_call_id: z.string().nullish(),
      }),
    )
    .min(1),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  seed: z.number().int().nullish(),
  tools: z
    .array(
      z.object({
        type: z.literal('function'),
        function: z.object({ name: z.string(), parameters: z.unknown().optional() }),
      }),
    )
    .nullish(),
  tool_choice: z
    .union([
      z.enum(['auto', 'none', 'required']),
      z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
    ])
    .nullish(),
  reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high']).nullish(),
  logprobs: z.boolean().nullish(),
  response_format: z
    .discriminatedUnion('type', [
      z.object({ type: z.literal('text') }),
      z.object({ type: z.literal('json_object') }),
      z.object({
        type: z.literal('json_schema'),
        json_schema: z.object({
          name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
          description: z.string().optional(),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullish(),
        }),
      }),
    ])
    .nullish(),
});

type ChatRequest = z.infer<typeof requestSchema>;

const errorKinds: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: 'invalid_request' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

/** Speaks OpenAI's Chat Completions protocol. */
export const openAIProtocol: ProtocolHandler = {
  protocol: 'openai',
  modelOf: (call) => bodyModel(call.body),
  authenticationError(call) {
    const authorization = headerValue(call.headers, 'authorization');
    if (authorization === undefined || !/^Bearer\s+\S/.test(authorization)) {
      return "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
    }
    return undefined;
  },
  parse: parseChatRequest,
  errorBody(status, message) {
    const kind = errorKinds[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
    return { error: { message, type: kind.type, param: null, code: kind.code } };
  },
  renderBody: renderCompletion,
  renderEvents: renderChunks,
};

function parseChatRequest(call: IncomingCall): ParsedCall {
  const parsed = requestSchema.safeParse(call.body);
  if (!parsed.success) return { ok: false, status: 400, message: `Invalid request: ${z.prettifyError(parsed.error)}` };
  const request = parsed.data;
  if (request.tool_choice != null && (request.tools ?? []).length === 0) {
    return {
      ok: false,
      status: 400,
      message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    };
  }
  return {
    ok: true,
    input: toSimulationInput(request),
    stream: request.stream === true ? 'sse' : false,
    includeUsage: request.stream !== true || request.stream_options?.include_usage === true,
  };
}

function toSimulationInput(request: ChatRequest): SimulationInput {
  const last = request.messages.at(-1);
  const lastUser = request.messages.findLast((message) => message.role === 'user');
  const promptChars = request.messages.reduce(
    (sum, message) =>
      sum +
      message.content.text.length +
      (message.tool_calls ?? []).reduce((calls, call) => calls + call.function.arguments.length, 0),
    0,
  );
  const toolChoice = request.tool_choice ?? 'auto';
  const sinceUser = request.messages.slice(request.messages.findLastIndex((message) => message.role === 'user') + 1);
  return {
    model: request.model,
    promptChars,
    lastTurn:
      last?.role === 'tool'
        ? { kind: 'tool-result', content: last.content.text }
        : { kind: 'user', text: lastUser?.content.text ?? '' },
    userText: lastUser?.content.text ?? '',
    toolRounds: sinceUser.filter((message) => message.role === 'assistant' && message.tool_calls?.length).length,
    tools: (request.tools ?? []).map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters })),
    toolChoice: typeof toolChoice === 'string' ? toolChoice : { name: toolChoice.function.name },
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    stop: typeof request.stop === 'string' ? [request.stop] : (request.stop ?? []),
    // DeepSeek's reasoner always reasons; OpenAI's reasoning models take reasoning_effort but show no reasoning.
    reasoning: request.model.includes('reasoner'),
    responseFormat: responseFormatOf(request.response_format),
    history: request.messages.flatMap((message): HistoryMessage[] => {
      if (message.role === 'user') return [{ role: 'user', text: message.content.text }];
      if (message.role !== 'assistant') return [];
      return [{ role: 'assistant', text: message.content.text, toolCalls: message.tool_calls?.length ?? 0 }];
    }),
    images: lastUser?.content.images ?? 0,
    ...(request.logprobs ? { logprobs: true } : {}),
  };
}

function responseFormatOf(format: ChatRequest['response_format']): SimulationInput['responseFormat'] {
  if (format == null || format.type === 'text') return undefined;
  if (format.type === 'json_object' || format.json_schema.schema === undefined) return { kind: 'json_object' };
  return { kind: 'json_schema', schema: format.json_schema.schema };
}

function usageOf(plan: ReplyPlan) {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: plan.reasoning.length, audio_tokens: 0 },
  };
}

/** DeepSeek's field for the reasoning, on a message and on a delta. */
function reasoningField(plan: ReplyPlan): { reasoning_content?: string } {
  return plan.reasoning.length > 0 ? { reasoning_content: plan.reasoning.join('') } : {};
}

function renderCompletion(plan: ReplyPlan, input: SimulationInput, options: { includeUsage: boolean }): unknown {
  const message =
    plan.kind === 'text'
      ? { role: 'assistant', content: plan.tokens.join(''), ...reasoningField(plan), refusal: null, annotations: [] }
      : {
          role: 'assistant',
          content: null,
          ...reasoningField(plan),
          refusal: null,
          annotations: [],
          tool_calls: [
            {
              id: `call_${simulatedId()}`,
              type: 'function',
              function: { name: plan.name, arguments: plan.argumentChunks.join('') },
            },
          ],
        };
  return {
    id: `chatcmpl-${simulatedId(29)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: input.model,
    choices: [{ index: 0, message, logprobs: logprobsOf(plan, input), finish_reason: plan.finish }],
    ...(options.includeUsage ? { usage: usageOf(plan) } : {}),
    service_tier: 'default',
    system_fingerprint: 'fp_simulator',
  };
}

function renderChunks(plan: ReplyPlan, input: SimulationInput, options: { includeUsage: boolean }): EventFrame[] {
  const base = {
    id: `chatcmpl-${simulatedId(29)}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: input.model,
    service_tier: 'default',
    system_fingerprint: 'fp_simulator',
  };
  // With include_usage, OpenAI puts `usage: null` on every chunk before the final usage-only chunk.
  const usageField = options.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, tokens: number): EventFrame => ({
    data: { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...usageField },
    tokens,
  });
  const frames: EventFrame[] = [];
  // DeepSeek opens with the role and streams its reasoning, with null content, before the answer.
  const reasoning = plan.reasoning.length > 0;
  if (reasoning) {
    frames.push(chunk({ role: 'assistant', content: null, reasoning_content: '' }, null, 0));
    for (const token of plan.reasoning) frames.push(chunk({ content: null, reasoning_content: token }, null, 1));
  }
  const role = reasoning ? {} : { role: 'assistant' };
  if (plan.kind === 'text') {
    frames.push(chunk({ ...role, content: '', refusal: null }, null, 0));
    for (const token of plan.tokens) frames.push(chunk({ content: token }, null, 1));
  } else {
    const call = {
      index: 0,
      id: `call_${simulatedId()}`,
      type: 'function',
      function: { name: plan.name, arguments: '' },
    };
    frames.push(chunk({ ...role, content: null, tool_calls: [call] }, null, 0));
    for (const piece of plan.argumentChunks) {
      frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null, 1));
    }
  }
  frames.push(chunk({}, plan.finish, 0));
  if (options.includeUsage) frames.push({ data: { ...base, choices: [], usage: usageOf(plan) }, tokens: 0 });
  frames.push({ data: '[DONE]', tokens: 0 });
  return frames;
}

/**
 * `logprobs: true`: each answer token with a log probability. The simulator is sure of its words: -0.01 each (a
 * probability of 0.99), except tokens holding a `?`, which get -0.7 (about 0.5), so a caller can tell both apart.
 */
function logprobsOf(plan: ReplyPlan, input: SimulationInput) {
  if (!input.logprobs || plan.kind !== 'text') return null;
  return {
    content: plan.tokens.map((token) => {
      const logprob = token.includes('?') ? -0.7 : -0.01;
      return { token, logprob, bytes: [...Buffer.from(token)], top_logprobs: [] };
    }),
    refusal: null,
  };
}
