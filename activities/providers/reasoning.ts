/**
 * How a request's `reasoning_effort` turns reasoning on for each wire protocol:
 * - OpenAI-compatible: sent as is, to catalogue models marked `reasoning` only (activities/provider-calls.ts).
 *   DeepSeek's `deepseek-reasoner` reasons (and streams `reasoning_content`) whatever the request says; OpenAI's
 *   own reasoning models take the effort but return no reasoning text in Chat Completions (only the Responses
 *   API has summaries), so their reasoning stays invisible.
 * - Anthropic: `thinking: {type: 'enabled', budget_tokens}` with the budget below (anthropic/request.ts says
 *   when it is left off).
 * - Gemini: `thinkingConfig: {includeThoughts: true, thinkingBudget}` with the budget below.
 * `none`, or no effort at all, asks for nothing on Anthropic and Gemini.
 */
import type { ReasoningEffort } from '../../common/chat.ts';

/**
 * Thinking tokens per effort, the budgets Google's OpenAI-compatible endpoint uses for low, medium and high;
 * `minimal` gets Anthropic's smallest allowed budget.
 */
const budgetByEffort: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  minimal: 1024,
  low: 1024,
  medium: 8192,
  high: 24_576,
};

/** The thinking budget a request asks for; undefined when it asks for no reasoning. */
export function thinkingBudget(effort: ReasoningEffort | undefined): number | undefined {
  return effort === undefined || effort === 'none' ? undefined : budgetByEffort[effort];
}
