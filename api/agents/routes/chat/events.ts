/**
 * The SSE stream of `POST /chat/stream/{session_id}`, `POST /chat/loop/{session_id}` and `POST /api/v1/chat` (spec 6):
 * lines `data: <JSON>`, each with an `id:` (its position, for `Last-Event-ID` when re-attaching), ending with
 * `data: [DONE]`. These zod schemas are the documentation of every payload, the spec's six open ones included
 * (docs/agent-service.md, "Agent service: chat"). Order: `routed` first, then `memories_loaded`, then as the agent
 * works `plan_*`, `token`, `tool` (with `tool_progress` between a call's `calling` and `done`),
 * `hitl_required`/`hitl_resolved` and (loops) `iteration`, then `cost` (or `error`), then [DONE].
 */
import { z } from 'zod';
import type { SequencedStreamEvent } from '../../../../common/completion.ts';
import type { ChatTurnEvent } from '../../../../common/chat-turn.ts';

const planStep = z.object({
  index: z.number().int(),
  title: z.string(),
  status: z.enum(['pending', 'in_progress', 'completed']),
});

export const agentStreamEvents = {
  routed: z.object({
    type: z.literal('routed'),
    agent_id: z.string(),
    agent_name: z.string(),
    /** The router's share for this agent among the candidates (softmax of their scores), 0..1. */
    confidence: z.number().min(0).max(1),
    method: z.enum(['model', 'keywords', 'preferred', 'named']),
    turn_id: z.string(),
    session_id: z.string(),
    model: z.string(),
  }),
  memories_loaded: z.object({
    type: z.literal('memories_loaded'),
    memories: z.array(z.object({ id: z.string(), content: z.string(), importance: z.number() })),
  }),
  plan_created: z.object({ type: z.literal('plan_created'), steps: z.array(planStep) }),
  plan_step: z.object({ type: z.literal('plan_step'), step: planStep, steps: z.array(planStep) }),
  plan_done: z.object({ type: z.literal('plan_done'), steps: z.array(planStep) }),
  token: z.object({ type: z.literal('token'), text: z.string() }),
  tool: z.object({
    type: z.literal('tool'),
    tool: z.string(),
    status: z.enum(['calling', 'done']),
    call_id: z.string(),
    /** `calling`: the arguments the agent sent. */
    arguments: z.unknown().optional(),
    /** `done`: whether it succeeded, and its result or error. */
    ok: z.boolean().optional(),
    result: z.unknown().optional(),
  }),
  /** What a running tool reports: a delegated agent's answer as it streams, say. */
  tool_progress: z.object({
    type: z.literal('tool_progress'),
    tool: z.string(),
    call_id: z.string(),
    text: z.string().optional(),
    detail: z.record(z.string(), z.string()).optional(),
  }),
  hitl_required: z.object({
    type: z.literal('hitl_required'),
    /** Approve with `POST /chat/approvals/{id}/approve`, reject with `.../reject`. */
    id: z.string(),
    tool: z.string(),
    arguments: z.unknown(),
    /** After this the call counts as rejected. */
    expires_at: z.string(),
  }),
  hitl_resolved: z.object({
    type: z.literal('hitl_resolved'),
    id: z.string(),
    approved: z.boolean(),
    /** `user:<id>`, or `timeout` when nobody answered in time. */
    by: z.string(),
    reason: z.string(),
  }),
  iteration: z.object({
    type: z.literal('iteration'),
    iteration: z.number().int().min(1),
    marker: z.enum(['continue', 'done', 'none']),
    /** Set on the last iteration: why the loop stopped. */
    stop: z.enum(['done', 'no_marker', 'max_iterations', 'budget', 'cancelled']).optional(),
  }),
  cost: z.object({
    type: z.literal('cost'),
    cost_usd: z.number(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    credits: z.number(),
    model: z.string(),
    /** Set when the turn was stopped (`POST /chat/turns/{id}/cancel`): its answer is what was streamed before. */
    stop: z.literal('cancelled').optional(),
  }),
  error: z.object({ type: z.literal('error'), error_type: z.string(), message: z.string() }),
} as const;

export type AgentStreamEventName = keyof typeof agentStreamEvents;

/** The agent-stream payload a turn event is sent as, or null when it is not sent. */
export function presentAgentEvent(event: SequencedStreamEvent['event']): Record<string, unknown> | null {
  const turnEvent = event as ChatTurnEvent | { type: 'text-delta'; text: string };
  switch (turnEvent.type) {
    case 'turn-start':
      return turnEvent.agent
        ? {
            type: 'routed',
            agent_id: turnEvent.agent.id,
            agent_name: turnEvent.agent.name,
            confidence: turnEvent.agent.confidence,
            method: turnEvent.agent.method,
            turn_id: turnEvent.turnId,
            session_id: turnEvent.sessionId,
            model: turnEvent.model,
          }
        : null;
    case 'memories-loaded':
      return { type: 'memories_loaded', memories: turnEvent.memories };
    case 'plan': {
      const steps = turnEvent.steps.map((step, index) => ({ index, title: step.title, status: step.status }));
      if (turnEvent.change === 'step' && turnEvent.step) {
        const { index, title, status } = turnEvent.step;
        return { type: 'plan_step', step: { index, title, status }, steps };
      }
      return { type: turnEvent.change === 'done' ? 'plan_done' : 'plan_created', steps };
    }
    case 'text-delta':
      return turnEvent.text ? { type: 'token', text: turnEvent.text } : null;
    case 'tool-start':
      return {
        type: 'tool',
        tool: turnEvent.name,
        status: 'calling',
        call_id: turnEvent.callId,
        arguments: parseJson(turnEvent.arguments),
      };
    case 'tool-result':
      return {
        type: 'tool',
        tool: turnEvent.name,
        status: 'done',
        call_id: turnEvent.callId,
        ok: turnEvent.ok,
        result: turnEvent.ok ? parseJson(turnEvent.content) : turnEvent.content,
      };
    case 'tool-progress':
      return {
        type: 'tool_progress',
        tool: turnEvent.name,
        call_id: turnEvent.callId,
        ...(turnEvent.text !== undefined ? { text: turnEvent.text } : {}),
        ...(turnEvent.detail ? { detail: turnEvent.detail } : {}),
      };
    case 'approval-required':
      return {
        type: 'hitl_required',
        id: turnEvent.approvalId,
        tool: turnEvent.name,
        arguments: parseJson(turnEvent.arguments),
        expires_at: turnEvent.expiresAt,
      };
    case 'approval-decided':
      return {
        type: 'hitl_resolved',
        id: turnEvent.approvalId,
        approved: turnEvent.approved,
        by: turnEvent.by,
        reason: turnEvent.reason,
      };
    case 'iteration':
      return {
        type: 'iteration',
        iteration: turnEvent.iteration,
        marker: turnEvent.marker,
        ...(turnEvent.stop ? { stop: turnEvent.stop } : {}),
      };
    case 'turn-done':
      return {
        type: 'cost',
        cost_usd: Math.round((turnEvent.costUsd ?? 0) * 1e8) / 1e8,
        input_tokens: turnEvent.usage.prompt_tokens,
        output_tokens: turnEvent.usage.completion_tokens,
        credits: turnEvent.credits,
        model: turnEvent.model,
        // A loop says why it stopped on its last `iteration`; any other turn stopped by its owner says so here.
        ...(turnEvent.stop === 'cancelled' && turnEvent.iterations === undefined ? { stop: 'cancelled' } : {}),
      };
    case 'turn-error':
      return { type: 'error', error_type: turnEvent.errorType, message: turnEvent.message };
    default:
      return null;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
