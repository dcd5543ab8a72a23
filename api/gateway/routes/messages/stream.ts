/**
 * A streamed Message in Anthropic's event grammar (docs.claude.com/en/docs/build-with-claude/streaming):
 * `message_start`, a `ping`, then per content block `content_block_start`, its deltas (`text_delta`,
 * `thinking_delta`, `input_json_delta`) and `content_block_stop`, one block open at a time, then `message_delta`
 * (stop reason and usage) and `message_stop`; a failure after the start is an `error` event. The platform's stream
 * parts arrive interleaved by kind (reasoning, text, tool calls by index): a part of another kind or another tool
 * call closes the open block and opens the next. `message_start` carries the prompt tokens as the platform counts
 * them for billing; `message_delta` the provider's own count.
 */
import type { FinishReason, Usage } from '../../../../common/chat.ts';
import type { ApiError } from '../../../errors.ts';
import { anthropicError } from '../../../../common/doors/messages/errors.ts';
import type { SseWriter } from '../../../sse.ts';
import type { StreamRenderer } from '../completions/relay.ts';
import type { StopReason } from '../../../../common/doors/messages/schema.ts';
import { anthropicUsage, stopReason } from '../../../../common/doors/messages/translate.ts';

type OpenBlock = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; toolIndex: number };

export function renderMessageEvents(id: string, requestedModel: string, promptTokens: number): StreamRenderer {
  let model = requestedModel;
  let started = false;
  let open: OpenBlock | null = null;
  let blockIndex = -1;
  let finish: StopReason | null = null;
  let stopSequence: string | null = null;

  /** An event, named by its `type` as Anthropic's streams name them. */
  const send = (sse: SseWriter, data: { type: string; [field: string]: unknown }) => sse.event(data.type, data);
  const start = (sse: SseWriter) => {
    if (started) return;
    started = true;
    send(sse, {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: { ...anthropicUsage({ prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: 0 }) },
      },
    });
    send(sse, { type: 'ping' });
  };
  const close = (sse: SseWriter) => {
    if (!open) return;
    send(sse, { type: 'content_block_stop', index: blockIndex });
    open = null;
  };
  /** Makes `wanted` the open block (closing another first), announcing it with `block` when it opens. */
  const ensure = (sse: SseWriter, wanted: OpenBlock, block: () => object) => {
    const same =
      open !== null &&
      open.kind === wanted.kind &&
      (open.kind !== 'tool' || (wanted.kind === 'tool' && open.toolIndex === wanted.toolIndex));
    if (same) return false;
    close(sse);
    open = wanted;
    blockIndex += 1;
    send(sse, { type: 'content_block_start', index: blockIndex, content_block: block() });
    return true;
  };
  const delta = (sse: SseWriter, value: object) =>
    send(sse, { type: 'content_block_delta', index: blockIndex, delta: value });

  return {
    get servedModel() {
      return model;
    },
    event(sse, item, replay) {
      const { event } = item;
      if (event.type === 'model') model = event.model;
      if (replay) return;
      switch (event.type) {
        case 'model':
          start(sse);
          return;
        case 'text-delta':
          start(sse);
          ensure(sse, { kind: 'text' }, () => ({ type: 'text', text: '', citations: null }));
          delta(sse, { type: 'text_delta', text: event.text });
          return;
        case 'reasoning-delta':
          start(sse);
          ensure(sse, { kind: 'thinking' }, () => ({ type: 'thinking', thinking: '', signature: '' }));
          delta(sse, { type: 'thinking_delta', thinking: event.text });
          return;
        case 'tool-call-delta':
          start(sse);
          ensure(sse, { kind: 'tool', toolIndex: event.index }, () => ({
            type: 'tool_use',
            id: event.id ?? `toolu_${id}_${event.index}`,
            name: event.name ?? '',
            input: {},
          }));
          if (event.argumentsDelta) delta(sse, { type: 'input_json_delta', partial_json: event.argumentsDelta });
          return;
        case 'finish':
          finish = event.stopSequence ? 'stop_sequence' : stopReason(event.reason as FinishReason);
          stopSequence = event.stopSequence ?? null;
          return;
        default:
          return;
      }
    },
    end(sse, usage: Usage) {
      start(sse);
      close(sse);
      send(sse, {
        type: 'message_delta',
        delta: { stop_reason: finish ?? 'end_turn', stop_sequence: stopSequence },
        usage: { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens },
      });
      send(sse, { type: 'message_stop' });
    },
    fail(sse, error: ApiError) {
      // Anthropic's SDKs take an `error` event as the stream's failure wherever it comes, before message_start too.
      sse.event('error', anthropicError(error).body);
    },
  };
}
