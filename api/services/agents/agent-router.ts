/**
 * Routing (spec 1, 4.1): which agent answers a message.
 *
 * 1. A fast model classifies (AGENT_ROUTER_MODEL, default gpt-4o-mini): it reads every candidate agent's description
 *    and routing keywords and scores each 0-10 for the message, answering JSON under a strict JSON schema
 *    (`{scores: {<agent id>: integer}}`). The call is a step of the turn itself (its `routeMessage` activity, see
 *    AgentChat.route): the turn's attempt 1, its worst case held in the turn's opening and settled at its real usage
 *    with the routed agent's hold, failing over between the router model's providers like any model call, and
 *    recorded in the turn's history and trace.
 * 2. When no model answers (every candidate failed, or the answer is not the JSON asked for), the agents' keyword
 *    hints decide (`keywordScores`). Measured on a labelled set (test/api/agent-routing.test.ts).
 *
 * Confidence is the chosen agent's share of a softmax over the scores (temperature `softmaxTemperature`): 1.0 when
 * one agent takes all, 1/n when the scores cannot tell the agents apart. It is computed from the scores of this
 * message, never a constant. Ties go to the agent listed first (the catalogue's order: `general` first), and a
 * message that scores zero everywhere goes to the first candidate at 1/n.
 *
 * `preferred_agents` restricts the candidates; one candidate is chosen without a model call (confidence 1).
 */
import type { ChatCompletionRequest, Usage } from '../../../common/chat.ts';
import type { Candidate } from '../../../common/completion.ts';
import type { ProviderCalls } from '../../../activities/provider-calls.ts';
import type { RoutedAgent } from '../../../common/chat-turn.ts';

export interface RoutableAgent {
  id: string;
  name: string;
  description: string;
  keywords: string[];
}

export interface RouteDecision {
  agent: RoutableAgent;
  confidence: number;
  method: RoutedAgent['method'];
  scores: Record<string, number>;
}

/** The classifier's call that answered: who served it and what it used (the turn's attempt `attempt`). */
export interface ClassifierCall {
  candidate: Candidate;
  usage: Usage;
  usageEstimated: boolean;
  latencyMs: number;
}

/** Softmax temperature over 0-10 scores: a lead of 3 points gives about 0.9 between two agents. */
export const softmaxTemperature = 1.4;
const maxScore = 10;

/** The classifier's request for a message and its candidates (the same for the hold and for the call). */
export function classifierRequest(model: string, message: string, candidates: RoutableAgent[]): ChatCompletionRequest {
  return {
    model,
    temperature: 0,
    max_tokens: 40 + 12 * candidates.length,
    messages: [
      {
        role: 'system',
        content:
          'You route a user message to the assistant agents best able to answer it. Score every agent from 0 ' +
          '(cannot help) to 10 (exactly its specialty) for the message, judging by its description.',
      },
      { role: 'user', content: message.slice(0, 4_000) },
    ],
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'agent_scores',
        strict: true,
        schema: {
          type: 'object',
          additionalProperties: false,
          required: ['scores'],
          properties: {
            scores: {
              type: 'object',
              additionalProperties: false,
              required: candidates.map((agent) => agent.id),
              properties: Object.fromEntries(
                candidates.map((agent) => [
                  agent.id,
                  {
                    type: 'integer',
                    minimum: 0,
                    maximum: maxScore,
                    description: `${agent.name}: ${agent.description} (topics: ${agent.keywords.join(', ')})`,
                  },
                ]),
              ),
            },
          },
        },
      },
    },
  };
}

export class AgentRouter {
  private readonly calls: ProviderCalls;
  readonly model: string;

  constructor(dependencies: { calls: ProviderCalls; model: string }) {
    this.calls = dependencies.calls;
    this.model = dependencies.model;
  }

  /**
   * Routes a message among candidates: by the classifier's scores when one of `classifier` (the router model's
   * planned candidates, tried in order) answers with them, else by the keywords. The call is made as attempt
   * `attempt` of `requestId` without touching the ledger: the caller settles it (`call`) or releases its hold.
   */
  async route(
    message: string,
    candidates: RoutableAgent[],
    classifier: { requestId: string; attempt: number; userId: string; candidates: Candidate[] } | null,
    signal: AbortSignal,
  ): Promise<{ decision: RouteDecision; call: ClassifierCall | null; fallback?: string }> {
    if (candidates.length === 1) {
      const only = candidates[0]!;
      return {
        decision: { agent: only, confidence: 1, method: 'preferred', scores: { [only.id]: maxScore } },
        call: null,
      };
    }
    const classified = classifier ? await this.classify(message, candidates, classifier, signal) : null;
    if (classified?.scores) {
      return { decision: decide(candidates, classified.scores, 'model'), call: classified.call };
    }
    return {
      decision: decide(candidates, keywordScores(message, candidates), 'keywords'),
      call: classified?.call ?? null,
      fallback: classified?.fallback ?? 'no model may classify for this caller',
    };
  }

  /**
   * Starts the classifier's first call now, for the routing step to adopt (ProviderCalls.callOrAdopt, keyed by request
   * and attempt) instead of calling again: the turn's start round trip and the call overlap, as a completion's
   * attempt 1 overlaps its workflow's start. `discard` it when the turn did not start in this process.
   */
  speculate(
    message: string,
    candidates: RoutableAgent[],
    classifier: { requestId: string; attempt: number; userId: string; candidates: Candidate[] },
  ): void {
    const first = classifier.candidates[0];
    if (!first || candidates.length < 2) return;
    void this.calls.startSpeculative(this.callInput(message, candidates, classifier, first)).catch(() => undefined);
  }

  /** Drops a speculative classifier call nobody will adopt. */
  discard(requestId: string, attempt: number): void {
    this.calls.discard(requestId, attempt);
  }

  private callInput(
    message: string,
    candidates: RoutableAgent[],
    classifier: { requestId: string; attempt: number; userId: string },
    candidate: Candidate,
  ) {
    return {
      requestId: classifier.requestId,
      attempt: classifier.attempt,
      candidate,
      request: classifierRequest(this.model, message, candidates),
      userId: classifier.userId,
      metered: false,
      workflowId: classifier.requestId,
    };
  }

  /** The fast model's scores (null when no model answered with them), and the call that answered. */
  private async classify(
    message: string,
    candidates: RoutableAgent[],
    classifier: { requestId: string; attempt: number; userId: string; candidates: Candidate[] },
    signal: AbortSignal,
  ): Promise<{ scores: Record<string, number> | null; call: ClassifierCall | null; fallback?: string }> {
    const failures: string[] = [];
    for (const candidate of classifier.candidates) {
      // The first candidate's call may be in flight already (`speculate`): adopted, not made again.
      const outcome = await this.calls.callOrAdopt(this.callInput(message, candidates, classifier, candidate), signal);
      if (outcome.outcome === 'skipped') {
        failures.push(`${candidate.provider}: ${outcome.reason}`);
        continue;
      }
      if (outcome.outcome === 'failed') {
        failures.push(`${candidate.provider}: ${outcome.error.message}`);
        // A request the provider rejects (a 400) is rejected by the others too: no failover, as for any model call.
        if (!outcome.error.retryable) break;
        continue;
      }
      const call: ClassifierCall = {
        candidate,
        usage: outcome.usage,
        usageEstimated: outcome.usageEstimated,
        latencyMs: outcome.latencyMs,
      };
      const content = outcome.message?.content;
      const scores = parseScores(typeof content === 'string' ? content : '', candidates);
      return scores ? { scores, call } : { scores: null, call, fallback: 'the classifier did not answer with scores' };
    }
    return { scores: null, call: null, fallback: `no classifier answered (${failures.join('; ') || 'no candidate'})` };
  }
}

/** The scores a classifier answered, clamped to 0-10; null unless every candidate has one. */
export function parseScores(text: string, candidates: RoutableAgent[]): Record<string, number> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const scores = (parsed as { scores?: Record<string, unknown> } | null)?.scores;
  if (!scores || typeof scores !== 'object') return null;
  const result: Record<string, number> = {};
  for (const agent of candidates) {
    const value = scores[agent.id];
    if (typeof value !== 'number' || !Number.isFinite(value)) return null;
    result[agent.id] = Math.min(maxScore, Math.max(0, value));
  }
  return result;
}

const wordPattern = /[\p{L}\p{N}]+/gu;

/**
 * Keyword scores (0-10) of each agent for the message: each routing keyword found adds its number of words (a phrase
 * is more specific than a word), the agent's name or id found adds 2, times 2, capped at 10. Words match when equal, or
 * when they share a prefix of at least five letters that is most (60 %) of the longer word ("translation" matches
 * "translate", "checklist" does not match "check").
 */
export function keywordScores(message: string, candidates: RoutableAgent[]): Record<string, number> {
  const words = [...new Set(message.toLowerCase().match(wordPattern) ?? [])];
  const exact = new Set(words);
  const similar = (part: string) =>
    exact.has(part) ||
    (part.length >= 5 &&
      words.some((word) => {
        let common = 0;
        while (common < word.length && common < part.length && word[common] === part[common]) common++;
        return common >= 5 && common >= 0.6 * Math.max(word.length, part.length);
      }));
  const weight = (hint: string) => {
    const parts = hint.toLowerCase().match(wordPattern) ?? [];
    return parts.length > 0 && parts.every(similar) ? parts.length : 0;
  };
  return Object.fromEntries(
    candidates.map((agent) => {
      const hits =
        agent.keywords.reduce((sum, keyword) => sum + weight(keyword), 0) +
        (weight(agent.name) || weight(agent.id) ? 2 : 0);
      return [agent.id, Math.min(maxScore, hits * 2)];
    }),
  );
}

/** The best-scoring candidate (the first on a tie) and its softmax share. */
export function decide(
  candidates: RoutableAgent[],
  scores: Record<string, number>,
  method: RouteDecision['method'],
): RouteDecision {
  let best = candidates[0]!;
  for (const agent of candidates) if ((scores[agent.id] ?? 0) > (scores[best.id] ?? 0)) best = agent;
  const exponents = candidates.map((agent) => Math.exp((scores[agent.id] ?? 0) / softmaxTemperature));
  const total = exponents.reduce((sum, value) => sum + value, 0);
  const confidence = Math.exp((scores[best.id] ?? 0) / softmaxTemperature) / total;
  return { agent: best, confidence: Math.round(confidence * 1000) / 1000, method, scores };
}
