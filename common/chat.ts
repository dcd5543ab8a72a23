/**
 * The OpenAI-compatible chat-completions contract: request schema (zod, the one source of truth) and the
 * response/chunk shapes the gateway returns. Workflow-safe: no Node built-ins, no I/O.
 */
import { z } from 'zod';

const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

/** Message content: a string, or the array-of-parts form the OpenAI SDK also sends (text parts only here). */
const contentSchema = z.union([
  z.string(),
  z
    .array(z.object({ type: z.literal('text'), text: z.string() }).passthrough())
    .transform((parts) => parts.map((part) => part.text).join('')),
]);

/**
 * An image a user message carries: a base64 `data:` URL of a PNG, JPEG, GIF or WebP image, or an https URL (the
 * provider fetches it). Only models with the `vision` capability are offered such a message (the router refuses).
 */
export const imageUrlPattern = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

/** An image's URL in a request: an https URL, or a base64 data: URL of a PNG, JPEG, GIF or WebP image. */
export const imageUrlSchema = z
  .string()
  .refine(
    (url) => imageUrlPattern.test(url) || /^https:\/\/\S+$/.test(url),
    'must be an https URL or a data:image/(png|jpeg|gif|webp);base64 URL',
  );

const textPartSchema = z.object({ type: z.literal('text'), text: z.string() });
const imagePartSchema = z.object({
  type: z.literal('image_url'),
  image_url: z.object({
    url: imageUrlSchema,
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
});

/**
 * A user message's content: text parts are joined into a string, as everywhere else; only a message with an image
 * keeps its parts (in order), so code that reads text sees a string unless images are there to handle.
 */
const userContentSchema = z.union([
  z.string(),
  z.array(z.discriminatedUnion('type', [textPartSchema, imagePartSchema])).transform((parts): UserContent => {
    if (!parts.some((part) => part.type === 'image_url')) return parts.map((part) => (part as TextPart).text).join('');
    return parts.map((part) =>
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : {
            type: 'image_url',
            image_url: { url: part.image_url.url, ...(part.image_url.detail ? { detail: part.image_url.detail } : {}) },
          },
    );
  }),
]);

export type TextPart = { type: 'text'; text: string };
export type ImagePart = { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } };
export type ContentPart = TextPart | ImagePart;
/** A string, or parts when the message carries an image. */
export type UserContent = string | ContentPart[];

/** The text of a user message's content (its text parts joined). */
export function contentText(content: UserContent | null | undefined): string {
  if (content == null) return '';
  return typeof content === 'string'
    ? content
    : content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The image parts of a user message's content. */
export function contentImages(content: UserContent | null | undefined): ImagePart[] {
  return Array.isArray(content) ? content.filter((part): part is ImagePart => part.type === 'image_url') : [];
}

/** True when some message of the conversation carries an image. */
export function hasImages(messages: Array<{ role: string; content?: UserContent | null }>): boolean {
  return messages.some((message) => message.role === 'user' && contentImages(message.content).length > 0);
}

export const chatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: contentSchema, name: z.string().optional() }),
  z.object({ role: z.literal('developer'), content: contentSchema, name: z.string().optional() }),
  z.object({ role: z.literal('user'), content: userContentSchema, name: z.string().optional() }),
  z.object({
    role: z.literal('assistant'),
    content: contentSchema.nullish(),
    name: z.string().optional(),
    tool_calls: z.array(toolCallSchema).optional(),
  }),
  z.object({ role: z.literal('tool'), content: contentSchema, tool_call_id: z.string().min(1) }),
]);

export const toolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});

export const toolChoiceSchema = z.union([
  z.enum(['auto', 'required', 'none']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
]);

export const responseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string(),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/**
 * OpenAI's `reasoning_effort`, the one knob for reasoning this API has: OpenAI-compatible upstreams get it as is;
 * on Anthropic and Gemini any value but `none` turns thinking on with a token budget for the effort, and the
 * reasoning comes back as `reasoning_content` (activities/providers/reasoning.ts).
 */
export const reasoningEffortSchema = z.enum(['none', 'minimal', 'low', 'medium', 'high']);

export const chatCompletionRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(chatMessageSchema).min(1),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  /**
   * Sampling from the k likeliest tokens: not an OpenAI field (vLLM and others take it), here for the Messages door
   * (`/v1/messages`). Anthropic and Gemini upstreams get it; OpenAI-compatible ones, which have no such knob, do not.
   */
  top_k: z.number().int().positive().nullish(),
  n: z.literal(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  seed: z.number().int().nullish(),
  user: z.string().max(256).nullish(),
  response_format: responseFormatSchema.nullish(),
  tools: z.array(toolSchema).max(128).nullish(),
  tool_choice: toolChoiceSchema.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  reasoning_effort: reasoningEffortSchema.nullish(),
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
export type ChatMessage = z.infer<typeof chatMessageSchema>;
export type Tool = z.infer<typeof toolSchema>;
export type ToolChoice = z.infer<typeof toolChoiceSchema>;
export type ToolCall = z.infer<typeof toolCallSchema>;
export type ResponseFormat = z.infer<typeof responseFormatSchema>;
export type ReasoningEffort = z.infer<typeof reasoningEffortSchema>;

export const finishReasonSchema = z.enum(['stop', 'length', 'tool_calls', 'content_filter']);
export type FinishReason = z.infer<typeof finishReasonSchema>;

export const usageSchema = z.strictObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type Usage = z.infer<typeof usageSchema>;

/** The answer of `POST /v1/chat/completions` (its OpenAPI response schema and the presenter's type). */
export const chatCompletionSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.strictObject({
        index: z.number().int(),
        message: z.strictObject({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          /** The model's reasoning, where its provider exposes it (DeepSeek's field name; never part of content). */
          reasoning_content: z.string().optional(),
          tool_calls: z.array(toolCallSchema).optional(),
          refusal: z.null(),
        }),
        finish_reason: finishReasonSchema,
        logprobs: z.null(),
      }),
    ),
    usage: usageSchema,
    system_fingerprint: z.string().optional(),
  })
  .meta({ id: 'ChatCompletion' });
export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

/** One event of a streamed completion (the `data:` of each server-sent event before `[DONE]`). */
export const chatCompletionChunkSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.strictObject({
        index: z.number().int(),
        delta: z.strictObject({
          role: z.literal('assistant').optional(),
          content: z.string().nullable().optional(),
          reasoning_content: z.string().optional(),
          tool_calls: z
            .array(
              z.strictObject({
                index: z.number().int(),
                id: z.string().optional(),
                type: z.literal('function').optional(),
                function: z.strictObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
              }),
            )
            .optional(),
        }),
        finish_reason: finishReasonSchema.nullable(),
        logprobs: z.null().optional(),
      }),
    ),
    usage: usageSchema.nullable().optional(),
  })
  .meta({ id: 'ChatCompletionChunk' });
export type ChatCompletionChunk = z.infer<typeof chatCompletionChunkSchema>;
