/**
 * OpenAI's Responses API as the Responses door (`/v1/responses`) takes and answers it: the request schema (the one
 * check of what a client sends, at the edge) and the Response object, its items and its stream events, as OpenAI's
 * API reference gives them (platform.openai.com/docs/api-reference/responses). Fields the platform does not serve
 * (`include`, `truncation`, `prompt_cache_key`, `safety_identifier`, `stream_options`, …) are accepted
 * and ignored; what it cannot carry (hosted tools such as web or file search, `item_reference`, input files,
 * `conversation`, `prompt`) is refused with a 400 that names it.
 */
import { z } from 'zod';
import { imageUrlSchema } from '../../chat.ts';

const inputText = z.object({ type: z.literal('input_text'), text: z.string() });
const inputImage = z.object({
  type: z.literal('input_image'),
  image_url: imageUrlSchema,
  detail: z.enum(['auto', 'low', 'high']).optional(),
});
const outputText = z.object({ type: z.literal('output_text'), text: z.string() }).passthrough();
const refusal = z.object({ type: z.literal('refusal'), refusal: z.string() });

const contentPart = z.discriminatedUnion('type', [inputText, inputImage, outputText, refusal], {
  error: 'a content part is one of input_text, input_image, output_text, refusal (input_file is not served)',
});

const messageItem = z.object({
  type: z.literal('message').optional(),
  id: z.string().optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(contentPart)]),
  status: z.string().optional(),
});

const functionCallItem = z.object({
  type: z.literal('function_call'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  status: z.string().optional(),
});

const functionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(inputText)]),
  status: z.string().optional(),
});

const reasoningItem = z.looseObject({ type: z.literal('reasoning') });

export const inputItem = z.union([functionCallItem, functionCallOutputItem, reasoningItem, messageItem], {
  error: 'an input item is a message, function_call, function_call_output or reasoning item',
});
export type InputItem = z.infer<typeof inputItem>;

const functionTool = z.object({
  type: z.literal('function', {
    error: 'only function tools are served (not OpenAI’s hosted tools: web search, file search, …)',
  }),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -'),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), name: z.string().min(1) }),
]);

const textFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    name: z.string().min(1),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullish(),
  }),
]);

export const responseRequestSchema = z
  .object({
    model: z.string().min(1).meta({ description: 'Any catalogue model (GET /v1/models), or `auto`' }),
    input: z.union([z.string(), z.array(inputItem).min(1)]),
    instructions: z.string().nullish(),
    previous_response_id: z.string().min(1).nullish(),
    store: z.boolean().nullish(),
    background: z.boolean().nullish(),
    stream: z.boolean().nullish(),
    max_output_tokens: z.number().int().positive().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    tools: z.array(functionTool).max(128).nullish(),
    tool_choice: toolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    text: z.object({ format: textFormat.optional(), verbosity: z.string().nullish() }).nullish(),
    reasoning: z
      .object({
        effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish(),
        summary: z.string().nullish(),
      })
      .nullish(),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
    user: z.string().max(256).nullish(),
    /** A background response's priority in the capacity queue: `priority` high, `flex` low (docs/capacity-queue.md). */
    service_tier: z.enum(['auto', 'default', 'flex', 'scale', 'priority']).nullish(),
    conversation: z.null({ error: 'conversation is not served: continue with previous_response_id' }).optional(),
    prompt: z.null({ error: 'stored prompts are not served' }).optional(),
  })
  .refine((body) => !body.metadata || Object.keys(body.metadata).length <= 16, {
    message: 'at most 16 metadata keys',
    path: ['metadata'],
  })
  .meta({ id: 'ResponseCreateRequest' });
export type ResponseRequest = z.infer<typeof responseRequestSchema>;

export const retrieveQuerySchema = z.object({
  stream: z.enum(['true', 'false']).optional(),
  starting_after: z.string().regex(/^\d+$/, 'must be an event’s sequence_number').optional(),
  include_obfuscation: z.string().optional(),
});

export const inputItemsQuerySchema = z.object({
  after: z.string().optional(),
  limit: z
    .string()
    .regex(/^\d+$/)
    .transform(Number)
    .refine((limit) => limit >= 1 && limit <= 100, 'must be 1 to 100')
    .optional(),
  order: z.enum(['asc', 'desc']).optional(),
  include: z.union([z.string(), z.array(z.string())]).optional(),
});

// --- the answer ---------------------------------------------------------------------------------------------------

export const outputItemSchema = z.looseObject({ type: z.string(), id: z.string() });

export const responseObjectSchema = z
  .looseObject({
    id: z.string().meta({ description: 'The response’s id (`resp_…`); its workflow is `completion-<id>`' }),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled']),
    background: z.boolean(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.object({ reason: z.string() }).nullable(),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    metadata: z.record(z.string(), z.string()),
    model: z.string(),
    output: z.array(outputItemSchema),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable(),
    store: z.boolean(),
    temperature: z.number().nullable(),
    top_p: z.number().nullable(),
    tools: z.array(z.unknown()),
    tool_choice: z.unknown(),
    usage: z.unknown().nullable(),
    queue_position: z.number().int().positive().optional().meta({
      description:
        'Tessera’s: while a background response is `queued` and waits for capacity, its place (1 = next) in the durable capacity queue',
    }),
  })
  .meta({ id: 'Response' });

/** A stream event: its `type` (also the SSE `event:` name) and `sequence_number`; the rest by type. */
export const responseStreamEventSchema = z
  .looseObject({ type: z.string(), sequence_number: z.number().int() })
  .meta({ id: 'ResponseStreamEvent' });
