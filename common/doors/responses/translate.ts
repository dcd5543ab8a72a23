/**
 * The Responses door's translations: a Response request (and the responses it continues) into the platform's one
 * completion request, its input as the items the API lists, and the Response object a client reads. Decisions, each
 * also in docs/client-apis.md:
 * - `instructions` is a system message first; those of the responses a request continues are not carried over (as
 *   OpenAI's API does), their input and output are.
 * - Reasoning items sent back are dropped (no provider takes another's reasoning); reasoning an answer had is an output
 *   item of type `reasoning` with its text.
 * - `text.format` is the platform's `response_format`; `reasoning.effort` its `reasoning_effort` (`xhigh` is high).
 */
import { randomBytes } from 'node:crypto';
import type {
  ChatCompletionRequest,
  ChatMessage,
  ContentPart,
  ReasoningEffort,
  ResponseFormat,
  ToolCall,
} from '../../chat.ts';
import type { OutputItem, ResponseRow, ResponseStatus } from '../../responses.ts';
import type { InputItem, ResponseRequest } from './schema.ts';

/** An input item as stored and listed (`GET /v1/responses/{id}/input_items`): each with its id. */
export type StoredItem =
  | {
      type: 'message';
      id: string;
      role: 'user' | 'assistant' | 'system' | 'developer';
      status: 'completed';
      content: Array<
        | { type: 'input_text'; text: string }
        | { type: 'input_image'; image_url: string; detail: string }
        | { type: 'output_text'; text: string; annotations: [] }
      >;
    }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'completed' }
  | { type: 'function_call_output'; id: string; call_id: string; output: string; status: 'completed' };

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

/** The request's input as stored items (a string is one user message); reasoning items are not kept. */
export function storedItems(input: ResponseRequest['input']): StoredItem[] {
  if (typeof input === 'string') {
    return [
      {
        type: 'message',
        id: newId('msg'),
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_text', text: input }],
      },
    ];
  }
  return input.flatMap((item): StoredItem[] => storedItem(item));
}

function storedItem(item: InputItem): StoredItem[] {
  if (item.type === 'reasoning') return [];
  if (item.type === 'function_call') {
    const { call_id, name } = item;
    return [
      {
        type: 'function_call',
        id: item.id ?? newId('fc'),
        call_id,
        name,
        arguments: item.arguments,
        status: 'completed',
      },
    ];
  }
  if (item.type === 'function_call_output') {
    const output = typeof item.output === 'string' ? item.output : item.output.map((part) => part.text).join('');
    return [
      { type: 'function_call_output', id: item.id ?? newId('fco'), call_id: item.call_id, output, status: 'completed' },
    ];
  }
  const message = item as Extract<InputItem, { role: string }>;
  const assistant = message.role === 'assistant';
  const parts =
    typeof message.content === 'string' ? [{ type: 'input_text' as const, text: message.content }] : message.content;
  const content = parts.map((part) => {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        return assistant
          ? { type: 'output_text' as const, text: part.text, annotations: [] as [] }
          : { type: 'input_text' as const, text: part.text };
      case 'refusal':
        return { type: 'output_text' as const, text: part.refusal, annotations: [] as [] };
      case 'input_image':
        return { type: 'input_image' as const, image_url: part.image_url, detail: part.detail ?? 'auto' };
    }
  });
  return [{ type: 'message', id: message.id ?? newId('msg'), role: message.role, status: 'completed', content }];
}

/** Chat messages for items, input or output, in order (consecutive function calls are one assistant message). */
export function messagesOf(items: Array<StoredItem | OutputItem>): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const calls = (): ToolCall[] | null => {
    const last = messages.at(-1);
    return last?.role === 'assistant' && last.tool_calls ? last.tool_calls : null;
  };
  for (const item of items) {
    switch (item.type) {
      case 'reasoning':
        break;
      case 'function_call': {
        const call: ToolCall = {
          id: item.call_id,
          type: 'function',
          function: { name: item.name, arguments: item.arguments },
        };
        const open = calls();
        if (open) open.push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
        break;
      case 'message': {
        if (item.role === 'assistant') {
          const text = item.content.map((part) => ('text' in part ? part.text : '')).join('');
          messages.push({ role: 'assistant', content: text });
          break;
        }
        const parts: ContentPart[] = item.content.map((part) =>
          part.type === 'input_image'
            ? { type: 'image_url', image_url: { url: part.image_url, detail: part.detail as 'auto' | 'low' | 'high' } }
            : { type: 'text', text: 'text' in part ? part.text : '' },
        );
        const images = parts.some((part) => part.type === 'image_url');
        const text = parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
        if (item.role === 'user') messages.push({ role: 'user', content: images ? parts : text });
        else messages.push({ role: item.role, content: text });
        break;
      }
    }
  }
  return messages;
}

/** The conversation of a request that continues `chain` (oldest first): each response's input, then its output. */
export function chainMessages(chain: ResponseRow[]): ChatMessage[] {
  return chain.flatMap((row) => messagesOf([...(row.inputItems as StoredItem[]), ...(row.output ?? [])]));
}

export function toCompletionRequest(
  request: ResponseRequest,
  history: ChatMessage[],
  items: StoredItem[],
  stream: boolean,
): ChatCompletionRequest {
  const messages: ChatMessage[] = [
    ...(request.instructions ? [{ role: 'system' as const, content: request.instructions }] : []),
    ...history,
    ...messagesOf(items),
  ];
  const effort = request.reasoning?.effort;
  return {
    model: request.model,
    messages,
    stream,
    ...(request.max_output_tokens ? { max_tokens: request.max_output_tokens } : {}),
    ...(request.temperature != null ? { temperature: request.temperature } : {}),
    ...(request.top_p != null ? { top_p: request.top_p } : {}),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            function: {
              name: tool.name,
              ...(tool.description ? { description: tool.description } : {}),
              ...(tool.parameters ? { parameters: tool.parameters } : {}),
              ...(tool.strict != null ? { strict: tool.strict } : {}),
            },
          })),
        }
      : {}),
    ...(request.tool_choice
      ? {
          tool_choice:
            typeof request.tool_choice === 'string'
              ? request.tool_choice
              : { type: 'function' as const, function: { name: request.tool_choice.name } },
        }
      : {}),
    ...(request.parallel_tool_calls != null ? { parallel_tool_calls: request.parallel_tool_calls } : {}),
    ...(request.text?.format ? { response_format: responseFormat(request.text.format) } : {}),
    ...(effort ? { reasoning_effort: (effort === 'xhigh' ? 'high' : effort) as ReasoningEffort } : {}),
    ...(request.user ? { user: request.user } : {}),
  };
}

function responseFormat(format: NonNullable<NonNullable<ResponseRequest['text']>['format']>): ResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name,
      schema: format.schema,
      ...(format.description ? { description: format.description } : {}),
      ...(format.strict != null ? { strict: format.strict } : {}),
    },
  };
}

/** What a Response echoes of its request (stored with it). */
export function echoed(request: ResponseRequest): Record<string, unknown> {
  return {
    max_output_tokens: request.max_output_tokens ?? null,
    temperature: request.temperature ?? null,
    top_p: request.top_p ?? null,
    tools: (request.tools ?? []).map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters ?? null,
      strict: tool.strict ?? null,
    })),
    tool_choice: request.tool_choice ?? 'auto',
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    text: { format: request.text?.format ?? { type: 'text' } },
    reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
    metadata: request.metadata ?? {},
    user: request.user ?? null,
    store: request.store ?? true,
  };
}

/** A response as the API shows it: its row (or, with `store: false`, the same fields in memory). */
export type ResponseView = Pick<
  ResponseRow,
  | 'id'
  | 'status'
  | 'background'
  | 'model'
  | 'servedModel'
  | 'previousResponseId'
  | 'instructions'
  | 'request'
  | 'output'
  | 'usage'
  | 'error'
  | 'incompleteDetails'
  | 'createdAt'
  | 'completedAt'
>;

export function presentResponse(view: ResponseView, overrides: { status?: ResponseStatus; output?: unknown[] } = {}) {
  const output = (overrides.output ?? view.output ?? []) as OutputItem[];
  const text = output
    .flatMap((item) => (item.type === 'message' ? item.content.map((part) => part.text) : []))
    .join('');
  const { store, ...echo } = view.request;
  return {
    id: view.id,
    object: 'response' as const,
    created_at: Math.floor(view.createdAt.getTime() / 1000),
    status: overrides.status ?? view.status,
    background: view.background,
    completed_at: view.completedAt ? Math.floor(view.completedAt.getTime() / 1000) : null,
    error: view.error,
    incomplete_details: view.incompleteDetails,
    instructions: view.instructions,
    model: view.servedModel ?? view.model,
    output,
    output_text: text,
    previous_response_id: view.previousResponseId,
    truncation: 'disabled',
    usage: view.usage,
    store: store !== false,
    ...echo,
  } as Record<string, unknown> & { id: string; status: ResponseStatus };
}
