/**
 * Shapes workflow results and stream events into the OpenAI chat-completion objects the SDK expects. Reasoning,
 * where the provider exposes it, travels in DeepSeek's `reasoning_content` field (message and delta), never in
 * `content`.
 */
import type { ChatCompletion, ChatCompletionChunk, Usage } from './chat.ts';
import type { CompletionMessage, StreamEvent } from './completion.ts';

export interface CompletionAnswerView {
  model: string;
  message: CompletionMessage | null;
  finishReason: ChatCompletion['choices'][number]['finish_reason'];
  usage: Usage;
}

export function presentCompletion(id: string, created: number, result: CompletionAnswerView): ChatCompletion {
  const toolCalls = result.message?.toolCalls ?? [];
  return {
    id,
    object: 'chat.completion',
    created,
    model: result.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 ? result.message?.content || null : (result.message?.content ?? ''),
          ...(result.message?.reasoning ? { reasoning_content: result.message.reasoning } : {}),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          refusal: null,
        },
        finish_reason: result.finishReason,
        logprobs: null,
      },
    ],
    usage: result.usage,
  };
}

/** Turns stream events into chunks; holds the model and whether the role chunk went out. */
export class ChunkPresenter {
  private readonly id: string;
  private readonly created: number;
  private model: string;

  constructor(id: string, created: number, requestedModel: string) {
    this.id = id;
    this.created = created;
    this.model = requestedModel;
  }

  /** The model named in the chunks: the served one once the stream announced it. */
  get servedModel(): string {
    return this.model;
  }

  /** Chunks for one event (none for events that only carry state). */
  present(event: StreamEvent): ChatCompletionChunk[] {
    switch (event.type) {
      case 'model':
        this.model = event.model;
        return [this.chunk({ role: 'assistant', content: '' }, null)];
      case 'text-delta':
        return [this.chunk({ content: event.text }, null)];
      // Reasoning passes through as DeepSeek sends it, in `delta.reasoning_content`, so it never mixes with the
      // answer: the OpenAI SDK and clients that know only `content` ignore it, those that know DeepSeek show it.
      case 'reasoning-delta':
        return [this.chunk({ reasoning_content: event.text }, null)];
      case 'tool-call-delta':
        return [
          this.chunk(
            {
              tool_calls: [
                {
                  index: event.index,
                  ...(event.id ? { id: event.id, type: 'function' as const } : {}),
                  function: { ...(event.name ? { name: event.name } : {}), arguments: event.argumentsDelta },
                },
              ],
            },
            null,
          ),
        ];
      case 'finish':
        return [this.chunk({}, event.reason)];
      // State, in-process signals, and chat turn events (a completion's stream never carries those).
      default:
        return [];
    }
  }

  usageChunk(usage: Usage): ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      usage,
    };
  }

  private chunk(
    delta: ChatCompletionChunk['choices'][number]['delta'],
    finishReason: ChatCompletionChunk['choices'][number]['finish_reason'],
  ): ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    };
  }
}
