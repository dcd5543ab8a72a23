/**
 * A chat turn's model call, built in one place for the two that make it: the turn's workflow (every call, as a local
 * activity) and the API that starts the turn's first call alongside the workflow's start (as a completion's attempt
 * 1 is), for the workflow's first local activity to adopt (activities/provider-calls.ts). Adoption is by turn and
 * attempt only, so the speculative call must be exactly the one the workflow would make: both build it here, from the
 * turn's input and the state the turn is in. Pure and deterministic (workflow code; the API imports it too).
 */
import type { CallProviderInput } from '../activities/completion-activities.ts';
import type { StoredMessage, TurnTarget } from '../activities/conversations/conversation-store.ts';
import type { ChatCompletionRequest, ChatMessage, Tool } from '../common/chat.ts';
import type { ChatTurnInput } from '../common/chat-turn.ts';
import { loopSystemInstruction } from '../common/agent-turn.ts';
import type { SequencedStreamEvent } from '../common/completion.ts';
import type { TurnTotals } from '../common/turn-totals.ts';
import type { AttemptExtra } from './model-call.ts';

/** Where a turn stands when it makes a model call. */
export interface TurnCallState {
  /** What the model reads: the history, the turn's own messages so far. */
  messages: ChatMessage[];
  /** Offer the turn's tools (a round below the limit, with tools to offer). */
  withTools: boolean;
  /** The stream position the call's first event takes. */
  seq: number;
  /** The attempt whose hold was taken before the call (1: the opening's; a routed turn's: its routing step's). */
  heldAttempt: number;
  /** Events the waiting response has and the journal does not yet (journalled with the call's own). */
  unjournaled: SequencedStreamEvent[];
  /** What the turn added before this call and has not stored, stored from position `firstSeq` when the call closes. */
  added: StoredMessage[];
  firstSeq: number;
  totals: TurnTotals;
}

/** The turn's stored-message target: its row and position in its conversation. */
export function turnTarget(input: ChatTurnInput): TurnTarget {
  return {
    turnId: input.turnId,
    conversationId: input.conversationId,
    sessionId: input.sessionId,
    channel: input.channel,
    turn: input.turn,
  };
}

/** The tools the turn offers the model, as the request carries them. */
export function offeredTools(input: ChatTurnInput): Tool[] {
  return Object.values(input.tools).map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** The request and what each attempt is given, for a model call of the turn in `state`. */
export function turnCall(
  input: ChatTurnInput,
  state: TurnCallState,
  offered: Tool[] = offeredTools(input),
): { request: ChatCompletionRequest; extra: AttemptExtra } {
  const request: ChatCompletionRequest = {
    model: input.requestedModel,
    messages: state.messages,
    // Always streamed from the provider, whether or not the client streams: the journal then records every answer,
    // so a call re-executed after a worker died reuses it (provider-calls.ts) and the tool calls it asked for keep
    // their ids, which is how a tool that ran is recognised and not run again.
    stream: true,
    ...(state.withTools ? { tools: offered } : {}),
    ...(input.reasoningEffort === undefined ? {} : { reasoning_effort: input.reasoningEffort }),
    ...(input.agent?.temperature === undefined ? {} : { temperature: input.agent.temperature }),
  };
  const extra: AttemptExtra = {
    seqBase: state.seq,
    collectMessage: true,
    workflowId: input.turnId,
    ...(state.heldAttempt !== 1 ? { heldAttempt: state.heldAttempt } : {}),
    ...(state.unjournaled.length ? { journalFirst: state.unjournaled } : {}),
    ...(input.loop
      ? {}
      : {
          stoppable: true,
          // When the answer ends the turn, the call closes it in its own transaction (turn-closer.ts).
          closeTurn: {
            target: turnTarget(input),
            sessionKey: input.sessionKey,
            messages: state.added,
            firstSeq: state.firstSeq,
            ...(input.agent ? { agentId: input.agent.id } : {}),
            totals: state.totals,
          },
        }),
  };
  return { request, extra };
}

/** The messages a turn opened with its history (`input.history`) reads: the history, the message's images beside its text. */
export function openingMessages(input: ChatTurnInput & { history: ChatMessage[] }): ChatMessage[] {
  return input.images?.length ? withImages(input.history, input.images) : [...input.history];
}

/** The agent's system prompt ahead of `messages` (an agent's turn; the gateway's chat has none), in place. */
export function withSystemPrompt(
  input: ChatTurnInput,
  messages: ChatMessage[],
  memories: Array<{ content: string }>,
): ChatMessage[] {
  if (input.agent) messages.unshift({ role: 'system', content: systemPrompt(input, memories) });
  return messages;
}

/**
 * The first attempt of the first call of a turn opened with its history: what the API starts alongside the turn's
 * start, as the workflow's first local activity will ask it (null when the turn has no model to call yet). A turn
 * routed inside its workflow makes it as attempt `firstAttempt` (after the classifier's), its hold taken by the
 * routing step.
 */
export function openingCall(
  input: ChatTurnInput & { history: ChatMessage[] },
  firstAttempt = 1,
): CallProviderInput | null {
  const candidate = input.candidates[0];
  if (!candidate || input.routing || input.loop?.carry) return null;
  const { request, extra } = turnCall(input, {
    messages: withSystemPrompt(input, openingMessages(input), input.openingMemories ?? []),
    withTools: input.maxToolRounds > 0 && Object.keys(input.tools).length > 0,
    seq: openingNextSeq(input),
    heldAttempt: firstAttempt,
    unjournaled: [],
    added: [],
    firstSeq: 1,
    totals: {
      model: input.requestedModel,
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      credits: 0,
      costUsd: 0,
    },
  });
  return {
    requestId: input.turnId,
    attempt: firstAttempt,
    candidate,
    request,
    userId: input.userId,
    metered: input.metered,
    ...extra,
  };
}

/** The first free stream position of a turn opened with its history: after `turn-start`, and `memories-loaded`. */
export function openingNextSeq(input: ChatTurnInput): number {
  return input.openingMemories ? 2 : 1;
}

/** The agent's system prompt: its own, the loop's rule, and what it remembers about the user. */
function systemPrompt(input: ChatTurnInput, memories: Array<{ content: string }>): string {
  const parts = [input.agent!.systemPrompt];
  if (input.loop) parts.push(loopSystemInstruction);
  if (memories.length) {
    parts.push(
      `What you remember about the user (most relevant first):\n${memories.map((memory) => `- ${memory.content}`).join('\n')}`,
    );
  }
  return parts.join('\n\n');
}

/** The messages with the images beside the text of the last (current) user message; the given ones are left as they were. */
export function withImages(messages: ChatMessage[], images: string[]): ChatMessage[] {
  const copy = [...messages];
  const last = copy.at(-1);
  if (!last || last.role !== 'user') return copy;
  const text = typeof last.content === 'string' ? last.content : '';
  copy[copy.length - 1] = {
    ...last,
    content: [{ type: 'text', text }, ...images.map((url) => ({ type: 'image_url', image_url: { url } }))],
  } as ChatMessage;
  return copy;
}
