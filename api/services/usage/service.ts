/**
 * What a session's chat has cost (`GET /usage/{session_id}`): the credit ledger's settle entries of its
 * conversation's turns (each turn's workflow id is the ledger's `workflow_id`; a turn with tool rounds or failover
 * settles several attempts), summed per model, and priced in USD at the model catalogue's rates per million input and
 * output tokens. Tokens and credits are what was charged, so a turn whose usage was estimated counts as estimated.
 */
import type { ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import { resolveModel, type Catalogue } from '../../../common/catalogue.ts';
import { run, type Pool } from '../../../db/pool.ts';

export interface ModelUsage {
  model: string;
  /** Turns that settled at least one attempt at this model. */
  turns: number;
  input_tokens: number;
  output_tokens: number;
  credits: number;
  cost_usd: number;
  /** False when the model is no longer in the catalogue: its cost counts as 0. */
  priced: boolean;
  /** Some of its usage was counted with a tokenizer (the provider reported none). */
  estimated: boolean;
}

export interface SessionUsage {
  session_id: string;
  /** Turns accepted in the session's conversation (finished, failed or running). */
  turns: number;
  input_tokens: number;
  output_tokens: number;
  credits: number;
  cost_usd: number;
  by_model: ModelUsage[];
}

const statements = {
  turns: {
    name: 'usage-conversation-turns',
    text: 'select count(*) as turns from chat_turns where conversation_id = $1',
  },
  /** The settled attempts per model of the conversation's turns and of their routing calls (turns keep their ids when
   * linking renumbers them). */
  byModel: {
    name: 'usage-conversation-by-model',
    text: `select l.model, count(distinct t.id) as turns, coalesce(sum(l.prompt_tokens), 0) as input_tokens,
                  coalesce(sum(l.completion_tokens), 0) as output_tokens, coalesce(sum(l.amount), 0) as credits,
                  bool_or(l.estimated) as estimated
           from chat_turns t
           join credit_ledger l on (l.workflow_id = t.id or l.workflow_id = t.routing_workflow_id) and l.kind = 'settle'
           where t.conversation_id = $1
           group by l.model order by l.model`,
  },
  /** The same settled attempts per turn and model (a conversation's export shows each turn's cost). */
  byTurnAndModel: {
    name: 'usage-conversation-by-turn-and-model',
    text: `select t.id as turn_id, l.model, coalesce(sum(l.prompt_tokens), 0) as input_tokens,
                  coalesce(sum(l.completion_tokens), 0) as output_tokens, coalesce(sum(l.amount), 0) as credits
           from chat_turns t
           join credit_ledger l on (l.workflow_id = t.id or l.workflow_id = t.routing_workflow_id) and l.kind = 'settle'
           where t.conversation_id = $1
           group by t.id, l.model`,
  },
} as const;

/** What one turn cost: its settled attempts summed over models, priced as `forSession` prices them. */
export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  credits: number;
  cost_usd: number;
  models: string[];
}

/** USD to 1e-8: a short turn on a cheap model costs a few millionths of a dollar. */
const usd = (value: number) => Math.round(value * 1e8) / 1e8;

export class UsageService {
  private readonly pool: Pool;
  private readonly conversations: ConversationStore;
  private readonly catalogue: Catalogue;

  constructor(dependencies: { pool: Pool; conversations: ConversationStore; catalogue: Catalogue }) {
    this.pool = dependencies.pool;
    this.conversations = dependencies.conversations;
    this.catalogue = dependencies.catalogue;
  }

  /** The owner's session's usage, or null when the owner has no session with this key. */
  async forSession(owner: string, key: string): Promise<SessionUsage | null> {
    const session = await this.conversations.findSession(owner, key);
    if (!session) return null;
    const [turns, rows] = await Promise.all([
      run<{ turns: string }>(this.pool, statements.turns, [session.conversationId]),
      run<{
        model: string | null;
        turns: string;
        input_tokens: string;
        output_tokens: string;
        credits: string;
        estimated: boolean;
      }>(this.pool, statements.byModel, [session.conversationId]),
    ]);
    const byModel = rows.map((row): ModelUsage => {
      const model = row.model ?? 'unknown';
      const input = Number(row.input_tokens);
      const output = Number(row.output_tokens);
      const cost = this.costOf(model, input, output);
      return {
        model,
        turns: Number(row.turns),
        input_tokens: input,
        output_tokens: output,
        credits: Number(row.credits),
        cost_usd: cost ?? 0,
        priced: cost !== null,
        estimated: row.estimated,
      };
    });
    const sum = (pick: (usage: ModelUsage) => number) => byModel.reduce((total, usage) => total + pick(usage), 0);
    const cost = sum((usage) => usage.cost_usd);
    for (const usage of byModel) usage.cost_usd = usd(usage.cost_usd);
    return {
      session_id: session.key,
      turns: Number(turns[0]?.turns ?? 0),
      input_tokens: sum((usage) => usage.input_tokens),
      output_tokens: sum((usage) => usage.output_tokens),
      credits: sum((usage) => usage.credits),
      cost_usd: usd(cost),
      by_model: byModel,
    };
  }

  /** Each turn's usage in a conversation, by the turn's id (turns that settled nothing are absent). */
  async forTurns(conversationId: string): Promise<Map<string, TurnUsage>> {
    const rows = await run<{
      turn_id: string;
      model: string | null;
      input_tokens: string;
      output_tokens: string;
      credits: string;
    }>(this.pool, statements.byTurnAndModel, [conversationId]);
    const turns = new Map<string, TurnUsage & { unrounded: number }>();
    for (const row of rows) {
      const model = row.model ?? 'unknown';
      const input = Number(row.input_tokens);
      const output = Number(row.output_tokens);
      const turn = turns.get(row.turn_id) ?? {
        input_tokens: 0,
        output_tokens: 0,
        credits: 0,
        cost_usd: 0,
        models: [],
        unrounded: 0,
      };
      turn.input_tokens += input;
      turn.output_tokens += output;
      turn.credits += Number(row.credits);
      turn.unrounded += this.costOf(model, input, output) ?? 0;
      turn.models.push(model);
      turns.set(row.turn_id, turn);
    }
    return new Map(
      [...turns].map(([id, { unrounded, ...turn }]) => [
        id,
        { ...turn, cost_usd: usd(unrounded), models: turn.models.sort() },
      ]),
    );
  }

  /** USD at the catalogue's list price; null when the model is no longer in the catalogue. */
  private costOf(model: string, inputTokens: number, outputTokens: number): number | null {
    // The ledger names the model that served, possibly a dated pin: priced as its catalogue model.
    const price = resolveModel(this.catalogue, model)?.model.price;
    return price ? (inputTokens * price.input_per_1m + outputTokens * price.output_per_1m) / 1e6 : null;
  }
}
