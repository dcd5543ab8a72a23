/**
 * What a chat turn has used so far, and the `turn-done` event it ends with. One place for the arithmetic, because two
 * places apply it: the turn's workflow, and the turn's last model call when that call closes the turn in its own
 * transaction (activities/conversations/turn-closer.ts). Workflow code: no zod, nothing with side effects.
 */
import type { Usage } from './chat.ts';
import type { ChatTurnEvent } from './chat-turn.ts';
import type { Candidate } from './completion.ts';
import { creditsFor } from './credits.ts';

export interface TurnTotals {
  /** The model that served the turn's last call. */
  model: string;
  usage: Usage;
  /** Credits charged (metered turns). */
  credits: number;
  /** Cost at the serving models' list prices (USD). */
  costUsd: number;
}

/** The totals after one more model call, served by `candidate` with `usage`. */
export function addModelCall(
  totals: TurnTotals,
  call: { candidate: Pick<Candidate, 'model' | 'creditRate' | 'price'>; usage: Usage; metered: boolean },
): TurnTotals {
  const { candidate, usage } = call;
  return {
    model: candidate.model,
    usage: {
      prompt_tokens: totals.usage.prompt_tokens + usage.prompt_tokens,
      completion_tokens: totals.usage.completion_tokens + usage.completion_tokens,
      total_tokens: totals.usage.total_tokens + usage.total_tokens,
    },
    credits:
      totals.credits +
      (call.metered && candidate.creditRate !== undefined ? creditsFor(usage.total_tokens, candidate.creditRate) : 0),
    costUsd:
      totals.costUsd +
      (usage.prompt_tokens * candidate.price.input_per_1m + usage.completion_tokens * candidate.price.output_per_1m) /
        1_000_000,
  };
}

/** The event a turn that answered ends with (`agent`: the agent service's turns also carry their cost). */
export function turnDoneEvent(
  turn: { turnId: string; sessionKey: string; agent: boolean },
  totals: TurnTotals,
  response: string,
  extra: Pick<Extract<ChatTurnEvent, { type: 'turn-done' }>, 'iterations' | 'stop'> = {},
): Extract<ChatTurnEvent, { type: 'turn-done' }> {
  return {
    type: 'turn-done',
    turnId: turn.turnId,
    sessionId: turn.sessionKey,
    model: totals.model,
    usage: totals.usage,
    credits: totals.credits,
    response,
    ...(turn.agent ? { costUsd: totals.costUsd } : {}),
    ...extra,
  };
}
