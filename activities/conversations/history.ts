/** The history a turn's model reads: what earlier turns of the conversation said, within the turn's token budget. */
import type { ChatMessage } from '../../common/chat.ts';
import { countPromptTokens } from '../credits/tokens.ts';

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
