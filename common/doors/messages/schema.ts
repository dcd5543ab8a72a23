/**
 * Anthropic's Messages API as the Messages door (`POST /v1/messages`) takes and answers it: the request schemas (the
 * one check of what a client sends, at the edge) and the shapes of the answer, its stream events and its errors, as
 * Anthropic's API reference gives them (docs.claude.com/en/api/messages). Fields Anthropic has and the platform does
 * not serve (`container`, `mcp_servers`, `service_tier`, `inference_geo`, `context_management`, …) are accepted and
 * ignored, as a client written for Anthropic sends them unasked; a content block or tool the platform cannot carry
 * (documents, Anthropic's server tools) is refused with a 400 that names it.
 */
import { z } from 'zod';

const cacheControl = z
  .object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() })
  .nullish()
  .meta({ description: 'Accepted and ignored: the platform does not cache prompts' });

const textBlock = z.object({
  type: z.literal('text'),
  text: z.string(),
  cache_control: cacheControl,
  citations: z.array(z.unknown()).nullish(),
});

const imageMediaTypes = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

const imageBlock = z.object({
  type: z.literal('image'),
  source: z.discriminatedUnion(
    'type',
    [
      z.object({
        type: z.literal('base64'),
        media_type: z.enum(imageMediaTypes),
        data: z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
      }),
      // Fetched by the platform through its URL guard (./routes.ts), so plain http is as safe as https here.
      z.object({ type: z.literal('url'), url: z.string().regex(/^https?:\/\/\S+$/, 'must be an http or https URL') }),
    ],
    { error: 'an image source is {type: "base64", media_type, data} or {type: "url", url}' },
  ),
  cache_control: cacheControl,
});

const toolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});

const toolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z
    .union([
      z.string(),
      z.array(
        z.discriminatedUnion('type', [textBlock], {
          error: 'a tool result here carries text blocks only (no images or documents)',
        }),
      ),
    ])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});

const thinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() });

const contentBlock = z.discriminatedUnion(
  'type',
  [textBlock, imageBlock, toolUseBlock, toolResultBlock, thinkingBlock, redactedThinkingBlock],
  { error: 'a content block is one of text, image, tool_use, tool_result, thinking, redacted_thinking' },
);

export const anthropicMessageParam = z.object({
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(contentBlock)]),
});

const toolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -');

const tool = z.object({
  type: z
    .literal('custom', {
      error: 'only custom tools ({name, description, input_schema}) are served; Anthropic’s server tools are not',
    })
    .nullish(),
  name: toolName,
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  cache_control: cacheControl,
});

const toolChoice = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal('none') }),
  ],
  { error: 'tool_choice is {type: auto | any | tool | none}' },
);

const thinking = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
    z.object({ type: z.literal('adaptive') }),
    z.object({ type: z.literal('disabled') }),
  ],
  { error: 'thinking is {type: enabled, budget_tokens} | {type: adaptive} | {type: disabled}' },
);

const system = z.union([z.string(), z.array(textBlock)]);

const fields = {
  model: z.string().min(1).meta({ description: 'Any catalogue model (GET /v1/models), or `auto`' }),
  messages: z.array(anthropicMessageParam).min(1),
  system: system.optional(),
  tools: z.array(tool).max(128).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  output_config: z
    .object({
      effort: z.enum(['low', 'medium', 'high', 'xhigh', 'max']).nullish(),
      format: z
        .object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) })
        .nullish()
        .meta({ description: 'Structured output: the answer is JSON matching `schema`' }),
    })
    .optional(),
};

export const messagesRequestSchema = z
  .object({
    ...fields,
    max_tokens: z.number().int().positive(),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().positive().optional(),
    stop_sequences: z
      .array(z.string().min(1))
      .max(4, 'at most 4 stop sequences: every provider behind the door must take them')
      .optional(),
    metadata: z.object({ user_id: z.string().max(256).nullish() }).optional(),
  })
  .meta({ id: 'AnthropicMessagesRequest' });

export const countTokensRequestSchema = z.object(fields).meta({ id: 'AnthropicCountTokensRequest' });

export type MessagesRequest = z.infer<typeof messagesRequestSchema>;
export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;
export type AnthropicMessageParam = z.infer<typeof anthropicMessageParam>;
export type ContentBlockParam = z.infer<typeof contentBlock>;

// --- the answer ---------------------------------------------------------------------------------------------------

export const stopReasons = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal'] as const;
export type StopReason = (typeof stopReasons)[number];

const responseText = z.strictObject({ type: z.literal('text'), text: z.string(), citations: z.null() });
const responseToolUse = z.strictObject({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});
const responseThinking = z.strictObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().meta({ description: 'Empty: the platform does not sign reasoning' }),
});
export const responseContentBlock = z.discriminatedUnion('type', [responseText, responseToolUse, responseThinking]);
export type ResponseContentBlock = z.infer<typeof responseContentBlock>;

export const anthropicUsageSchema = z.strictObject({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int().meta({ description: 'Always 0: no prompt caching' }),
  cache_read_input_tokens: z.number().int().meta({ description: 'Always 0: no prompt caching' }),
});
export type AnthropicUsage = z.infer<typeof anthropicUsageSchema>;

export const anthropicMessageSchema = z
  .strictObject({
    id: z.string().meta({ description: 'The request’s id (`msg_…`): GET /api/v1/requests/{id} shows its attempts' }),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string().meta({ description: 'The model that served (after failover, possibly another than asked)' }),
    content: z.array(responseContentBlock),
    stop_reason: z.enum(stopReasons).nullable(),
    stop_sequence: z.string().nullable().meta({
      description:
        'The stop sequence that ended the answer, where the serving provider says so (Anthropic); otherwise null',
    }),
    stop_details: z.null(),
    usage: anthropicUsageSchema,
  })
  .meta({ id: 'AnthropicMessage' });
export type AnthropicMessage = z.infer<typeof anthropicMessageSchema>;

export const anthropicErrorSchema = z
  .strictObject({
    type: z.literal('error'),
    error: z.strictObject({
      type: z.enum([
        'invalid_request_error',
        'authentication_error',
        'billing_error',
        'permission_error',
        'not_found_error',
        'request_too_large',
        'rate_limit_error',
        'api_error',
        'overloaded_error',
      ]),
      message: z.string(),
    }),
    request_id: z.string().optional(),
  })
  .meta({ id: 'AnthropicError', description: 'Anthropic’s error envelope' });

/** The named events of a streamed Message (`event:` is the type; `data:` the JSON below). */
export const messageStreamEvents = {
  message_start: z.object({
    type: z.literal('message_start'),
    message: anthropicMessageSchema.extend({ stop_reason: z.null() }),
  }),
  ping: z.object({ type: z.literal('ping') }),
  content_block_start: z.object({
    type: z.literal('content_block_start'),
    index: z.number().int(),
    content_block: responseContentBlock,
  }),
  content_block_delta: z.object({
    type: z.literal('content_block_delta'),
    index: z.number().int(),
    delta: z.discriminatedUnion('type', [
      z.object({ type: z.literal('text_delta'), text: z.string() }),
      z.object({ type: z.literal('input_json_delta'), partial_json: z.string() }),
      z.object({ type: z.literal('thinking_delta'), thinking: z.string() }),
    ]),
  }),
  content_block_stop: z.object({ type: z.literal('content_block_stop'), index: z.number().int() }),
  message_delta: z.object({
    type: z.literal('message_delta'),
    delta: z.object({ stop_reason: z.enum(stopReasons).nullable(), stop_sequence: z.string().nullable() }),
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
  }),
  message_stop: z.object({ type: z.literal('message_stop') }),
  error: anthropicErrorSchema,
};
