/**
 * A streamed Response in the Responses API's event grammar: `response.created` and `response.in_progress`, then per
 * output item `response.output_item.added`, its parts and deltas (`response.content_part.added`,
 * `response.output_text.delta`, `response.reasoning_text.delta`, `response.function_call_arguments.delta`) and their
 * `.done` events, `response.output_item.done`, and at the end `response.completed`, `response.incomplete` (cut by
 * max_output_tokens, or cancelled: its `response.status` says which) or `response.failed`. Each event carries its
 * `sequence_number`, counted from 0. The rendering is a pure function of the stream journal, so a stream read again
 * (`GET /v1/responses/{id}?stream=true&starting_after=N`, also after a restart) numbers every event as the first
 * reading did and sends those after N. One item is open at a time: a part of another kind, or of another function
 * call, closes the open item and opens the next, in the order the provider streamed them.
 */
import type { FinishReason, Usage } from '../../../../common/chat.ts';
import type { CompletionResult } from '../../../../common/completion.ts';
import {
  finishedStatus,
  itemIds,
  responseUsage,
  type OutputItem,
  type ResponseStatus,
} from '../../../../common/responses.ts';
import type { ApiError } from '../../../errors.ts';
import type { SseWriter } from '../../../sse.ts';
import type { StreamRenderer } from '../completions/relay.ts';
import { presentResponse, type ResponseView } from '../../../../common/doors/responses/translate.ts';

/**
 * `stored`: the response's row is written by its workflow, and the stream's last event waits for it, so that a client
 * reading the response as soon as its stream ended reads it ended (a background response's always waits: its end may be
 * a cancel, which the workflow's result says).
 */
export function renderResponseEvents(
  view: ResponseView,
  options: { startingAfter?: number; stored?: boolean } = {},
): StreamRenderer {
  const startingAfter = options.startingAfter ?? -1;
  let sequence = 0;
  let model = view.model;
  let started = false;
  const items: OutputItem[] = [];
  /** The open item's index in `items`, and which function call it is. */
  let open: { index: number; toolIndex?: number } | null = null;
  let finish: FinishReason = 'stop';

  const send = (sse: SseWriter, type: string, data: Record<string, unknown>) => {
    const numbered = { type, sequence_number: sequence++, ...data };
    if (numbered.sequence_number > startingAfter) sse.event(type, numbered);
  };
  const snapshot = (status: ResponseStatus, extra: Partial<ResponseView> = {}) =>
    presentResponse({ ...view, servedModel: model, ...extra }, { status, output: structuredClone(items) });
  const start = (sse: SseWriter) => {
    if (started) return;
    started = true;
    send(sse, 'response.created', { response: snapshot(view.background ? 'queued' : 'in_progress') });
    send(sse, 'response.in_progress', { response: snapshot('in_progress') });
  };
  const close = (sse: SseWriter) => {
    if (!open) return;
    const item = items[open.index]!;
    const output_index = open.index;
    open = null;
    if (item.type === 'message') {
      const part = item.content[0]!;
      send(sse, 'response.output_text.done', {
        item_id: item.id,
        output_index,
        content_index: 0,
        text: part.text,
        logprobs: [],
      });
      send(sse, 'response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: { ...part } });
    } else if (item.type === 'reasoning') {
      const part = item.content[0]!;
      send(sse, 'response.reasoning_text.done', { item_id: item.id, output_index, content_index: 0, text: part.text });
      send(sse, 'response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: { ...part } });
    } else {
      send(sse, 'response.function_call_arguments.done', {
        item_id: item.id,
        output_index,
        name: item.name,
        arguments: item.arguments,
      });
    }
    item.status = 'completed';
    send(sse, 'response.output_item.done', { output_index, item: structuredClone(item) });
  };
  /** Opens `item` (closing the open one), announcing it and its first part. */
  const openItem = (sse: SseWriter, item: OutputItem, toolIndex?: number) => {
    close(sse);
    const output_index = items.length;
    items.push(item);
    open = { index: output_index, ...(toolIndex !== undefined ? { toolIndex } : {}) };
    const announced = structuredClone(item);
    if (announced.type !== 'function_call') announced.content = [];
    send(sse, 'response.output_item.added', { output_index, item: announced });
    if (item.type === 'message') {
      send(sse, 'response.content_part.added', {
        item_id: item.id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
    } else if (item.type === 'reasoning') {
      send(sse, 'response.content_part.added', {
        item_id: item.id,
        output_index,
        content_index: 0,
        part: { type: 'reasoning_text', text: '' },
      });
    }
  };
  const current = () => (open ? items[open.index]! : null);

  return {
    get servedModel() {
      return model;
    },
    needsResult: view.background || !!options.stored,
    event(sse, item) {
      const { event } = item;
      switch (event.type) {
        case 'model':
          model = event.model;
          start(sse);
          return;
        case 'text-delta': {
          start(sse);
          let message = current();
          if (message?.type !== 'message') {
            message = {
              type: 'message',
              id: itemIds.message(view.id),
              role: 'assistant',
              status: 'in_progress',
              content: [{ type: 'output_text', text: '', annotations: [], logprobs: [] }],
            };
            openItem(sse, message);
          }
          message.content[0]!.text += event.text;
          send(sse, 'response.output_text.delta', {
            item_id: message.id,
            output_index: open!.index,
            content_index: 0,
            delta: event.text,
            logprobs: [],
          });
          return;
        }
        case 'reasoning-delta': {
          start(sse);
          let reasoning = current();
          if (reasoning?.type !== 'reasoning') {
            reasoning = {
              type: 'reasoning',
              id: itemIds.reasoning(view.id),
              summary: [],
              status: 'in_progress',
              content: [{ type: 'reasoning_text', text: '' }],
            };
            openItem(sse, reasoning);
          }
          reasoning.content[0]!.text += event.text;
          send(sse, 'response.reasoning_text.delta', {
            item_id: reasoning.id,
            output_index: open!.index,
            content_index: 0,
            delta: event.text,
          });
          return;
        }
        case 'tool-call-delta': {
          start(sse);
          let call = current();
          if (call?.type !== 'function_call' || open?.toolIndex !== event.index) {
            call = {
              type: 'function_call',
              id: itemIds.functionCall(view.id, event.index),
              call_id: event.id ?? `call_${event.index}`,
              name: event.name ?? '',
              arguments: '',
              status: 'in_progress',
            };
            openItem(sse, call, event.index);
          }
          if (event.argumentsDelta) {
            call.arguments += event.argumentsDelta;
            send(sse, 'response.function_call_arguments.delta', {
              item_id: call.id,
              output_index: open!.index,
              delta: event.argumentsDelta,
            });
          }
          return;
        }
        case 'finish':
          finish = event.reason;
          return;
        default:
          return;
      }
    },
    end(sse, usage: Usage, result?: CompletionResult) {
      start(sse);
      close(sse);
      const status = finishedStatus(finish, !!result?.stopped);
      const ended = {
        usage: responseUsage(usage),
        completedAt: new Date(),
        incompleteDetails: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      };
      send(sse, status === 'completed' ? 'response.completed' : 'response.incomplete', {
        response: snapshot(status, ended),
      });
    },
    fail(sse, error: ApiError) {
      start(sse);
      send(sse, 'response.failed', {
        response: snapshot('failed', { error: { code: error.type, message: error.message }, completedAt: new Date() }),
      });
    },
  };
}
