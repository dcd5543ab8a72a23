/** The history a turn's model reads: what earlier turns of the conversation said, within the turn's token budget. */
import type { ChatMessage } from '../../common/chat.ts';
import type { LoadedMemory } from '../../common/chat-turn.ts';
import type { Queryable } from '../../db/pool.ts';
import { countPromptTokens } from '../credits/tokens.ts';
import type { ConversationStore } from './conversation-store.ts';

/** Where a turn's context is read from: its conversation, and the account's memories (the agent service's). */
export interface TurnContextStores {
  conversations: Pick<ConversationStore, 'history'>;
  memories?: {
    relevant(userId: string, text: string, limit: number, executor?: Queryable): Promise<LoadedMemory[]>;
  };
}

/**
 * What a turn's first model call reads, read in one place for the three that read it: the turn's opening when the
 * previous turn has ended (api/services/chat/service.ts), the routing step of a turn routed inside its workflow
 * (api/services/agents/agent-chat.ts), else the turn's first step after waiting (chat-activities.ts). The history
 * within the budget (`modelHistory`) and, when the turn loads them and the process has them, the memories relevant
 * to the message; on `executor` (a transaction's client) when given.
 */
export async function readTurnContext(
  stores: TurnContextStores,
  turn: { conversationId: string; turn: number; message: string; memories?: { userId: string; limit: number } },
  budgetTokens: number,
  executor?: Queryable,
): Promise<{ history: ChatMessage[]; memories?: LoadedMemory[] }> {
  const earlier = turn.turn === 1 ? [] : await stores.conversations.history(turn.conversationId, turn.turn, executor);
  const history = modelHistory(earlier, turn.message, budgetTokens);
  if (!turn.memories || !stores.memories) return { history };
  const found = await stores.memories.relevant(turn.memories.userId, turn.message, turn.memories.limit, executor);
  return { history, memories: found.map(({ id, content, importance }) => ({ id, content, importance })) };
}

/**
 * The messages a turn's first model call reads: the newest of the conversation's earlier messages (`earlier`, in
 * order) that fit the budget beside the user's message, then that message. Used where the history is loaded: the
 * turn's opening transaction when the previous turn has ended (api/services/chat/service.ts), else the turn's first
 * step, after waiting for that turn (chat-activities.ts).
 */
export function modelHistory(earlier: ChatMessage[], message: string, budgetTokens: number): ChatMessage[] {
  const current: ChatMessage = { role: 'user', content: message };
  return [...trimHistory(earlier, budgetTokens - countPromptTokens([current])), current];
}

/**
 * The newest messages that fit `budgetTokens`, counted with the tokenizer. Units are dropped whole from the oldest:
 * a user message, or an assistant message together with the tool results that answer its calls (a tool result
 * without its call, or a call without its results, is not a valid history).
 */
export function trimHistory(history: ChatMessage[], budgetTokens: number): ChatMessage[] {
  const units: ChatMessage[][] = [];
  for (const message of history) {
    if (message.role === 'tool' && units.length > 0) units.at(-1)!.push(message);
    else units.push([message]);
  }
  const kept: ChatMessage[][] = [];
  let used = 0;
  for (let index = units.length - 1; index >= 0; index--) {
    const unit = units[index]!;
    const tokens = countPromptTokens(unit);
    if (used + tokens > budgetTokens) break;
    used += tokens;
    kept.unshift(unit);
  }
  // A history never starts with tool results (their call was dropped).
  return kept
    .flat()
    .filter((message, index, all) => !(message.role === 'tool' && all.slice(0, index).every((m) => m.role === 'tool')));
}
