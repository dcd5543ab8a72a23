/**
 * The Responses door's shared vocabulary (OpenAI's Responses API, `/v1/responses`): what a completion that is a Response
 * carries into its workflow, and its output items as the API shows them and the workflow stores them. Workflow-safe:
 * no Node built-ins, no I/O. Item ids are derived from the response's id, so the output a client streamed, the output
 * stored, and a stream read again later name the same items.
 */
import type { FinishReason, Usage } from './chat.ts';
import type { CompletionMessage } from './completion.ts';
import type { CapacityPriority } from './capacity.ts';

/** A completion that is a Response: its row in `model_responses` follows the workflow (activities/responses/). */
export interface ResponseRecord {
  responseId: string;
  /** Answered at once (`queued`), run by any worker; cancellable while it runs. */
  background: boolean;
  /**
   * A background response waits in the capacity queue (docs/capacity-queue.md) at this priority (from `service_tier`).
   * Absent in histories from before the queue.
   */
  priority?: CapacityPriority;
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: [];
  logprobs: [];
}

export type OutputItem =
  | {
      type: 'reasoning';
      id: string;
      summary: [];
      content: Array<{ type: 'reasoning_text'; text: string }>;
      status: 'completed' | 'in_progress' | 'incomplete';
    }
  | {
      type: 'message';
      id: string;
      role: 'assistant';
      status: 'completed' | 'in_progress' | 'incomplete';
      content: OutputText[];
    }
  | {
      type: 'function_call';
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      status: 'completed' | 'in_progress' | 'incomplete';
    };

/** The part of a response id after `resp_`, which its items' ids carry. */
const suffixOf = (responseId: string) => responseId.replace(/^resp_/, '');

/** Ids of a response's items: its reasoning, its message, its n-th function call. */
export const itemIds = {
  reasoning: (responseId: string) => `rs_${suffixOf(responseId)}`,
  message: (responseId: string) => `msg_${suffixOf(responseId)}`,
  functionCall: (responseId: string, index: number) => `fc_${suffixOf(responseId)}_${index}`,
};

/**
 * The output items of an answer, in the order a stream shows them: reasoning, the message, then the function calls.
 * `complete`: false for an answer cut short (max_output_tokens, a cancel), whose items are `incomplete`.
 */
export function outputItems(responseId: string, message: CompletionMessage | null, complete = true): OutputItem[] {
  const status = complete ? 'completed' : 'incomplete';
  const items: OutputItem[] = [];
  if (message?.reasoning) {
    items.push({
      type: 'reasoning',
      id: itemIds.reasoning(responseId),
      summary: [],
      content: [{ type: 'reasoning_text', text: message.reasoning }],
      status,
    });
  }
  const toolCalls = message?.toolCalls ?? [];
  if (message?.content || toolCalls.length === 0) {
    items.push({
      type: 'message',
      id: itemIds.message(responseId),
      role: 'assistant',
      status,
      content: [{ type: 'output_text', text: message?.content ?? '', annotations: [], logprobs: [] }],
    });
  }
  toolCalls.forEach((call, index) =>
    items.push({
      type: 'function_call',
      id: itemIds.functionCall(responseId, index),
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status,
    }),
  );
  return items;
}

/** The Responses API's usage for the platform's. */
export function responseUsage(usage: Usage) {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

/** How an answer ends a response: cut by the token limit it is `incomplete`, stopped by a cancel `cancelled`. */
export function finishedStatus(finishReason: FinishReason, stopped: boolean): ResponseStatus {
  if (stopped) return 'cancelled';
  return finishReason === 'length' ? 'incomplete' : 'completed';
}

/** A stored Response (`model_responses`, activities/responses/response-store.ts). */
export interface ResponseRow {
  id: string;
  userId: string;
  status: ResponseStatus;
  background: boolean;
  stream: boolean;
  model: string;
  servedModel: string | null;
  previousResponseId: string | null;
  instructions: string | null;
  request: Record<string, unknown>;
  inputItems: unknown[];
  output: OutputItem[] | null;
  usage: ReturnType<typeof responseUsage> | null;
  error: { code: string; message: string } | null;
  incompleteDetails: { reason: string } | null;
  createdAt: Date;
  completedAt: Date | null;
}
