/**
 * The chat stream's events (api/agents/routes/chat/events.ts, where each payload is a zod schema; typed here from the
 * OpenAPI document's `AgentStreamEvent`) and what the page makes of them: a turn as a person reads it.
 */
import type { Schemas } from '../api/client.ts';

/** One event's payload (`data: <JSON>`); `[DONE]` ends the stream and is not one. */
export type StreamEvent = Exclude<Schemas['AgentStreamEvent']['data'], string>;

export type PlanStep = Extract<StreamEvent, { type: 'plan_created' }>['steps'][number];

export interface ToolCall {
  kind: 'tool';
  callId: string;
  tool: string;
  arguments?: unknown;
  status: 'calling' | 'done' | 'failed';
  progress: string;
  result?: unknown;
}

export interface Approval {
  kind: 'approval';
  id: string;
  tool: string;
  arguments: unknown;
  expiresAt: string;
  decision: null | { approved: boolean; by: string; reason: string };
}

export type TurnPart =
  | { kind: 'text'; text: string }
  | ToolCall
  | Approval
  | { kind: 'iteration'; iteration: number; marker: string; stop?: string };

export interface Turn {
  turnId: string | null;
  loop: boolean;
  agent: { id: string; name: string; confidence: number; method: string; model: string } | null;
  memories: Array<{ id: string; content: string }>;
  plan: PlanStep[];
  parts: TurnPart[];
  cost: { credits: number; costUsd: number; inputTokens: number; outputTokens: number; model: string } | null;
  error: string | null;
  status: 'streaming' | 'done' | 'failed';
  cancelling: boolean;
  /** Stopped by the person (Stop): the answer is what was streamed before. */
  stopped: boolean;
}

export function emptyTurn(loop: boolean): Turn {
  return {
    turnId: null,
    loop,
    agent: null,
    memories: [],
    plan: [],
    parts: [],
    cost: null,
    error: null,
    status: 'streaming',
    cancelling: false,
    stopped: false,
  };
}

/** The turn after one event (a new object: the page re-renders it). */
export function applyEvent(turn: Turn, event: StreamEvent): Turn {
  switch (event.type) {
    case 'routed':
      return {
        ...turn,
        turnId: event.turn_id,
        agent: {
          id: event.agent_id,
          name: event.agent_name,
          confidence: event.confidence,
          method: event.method,
          model: event.model,
        },
      };
    case 'memories_loaded':
      return { ...turn, memories: event.memories.map(({ id, content }) => ({ id, content })) };
    case 'plan_created':
    case 'plan_step':
    case 'plan_done':
      return { ...turn, plan: event.steps };
    case 'token': {
      const last = turn.parts.at(-1);
      const parts =
        last?.kind === 'text'
          ? [...turn.parts.slice(0, -1), { kind: 'text' as const, text: last.text + event.text }]
          : [...turn.parts, { kind: 'text' as const, text: event.text }];
      return { ...turn, parts };
    }
    case 'tool': {
      if (event.status === 'calling') {
        const call: ToolCall = {
          kind: 'tool',
          callId: event.call_id,
          tool: event.tool,
          arguments: event.arguments,
          status: 'calling',
          progress: '',
        };
        return { ...turn, parts: [...turn.parts, call] };
      }
      return {
        ...turn,
        parts: turn.parts.map((part) =>
          part.kind === 'tool' && part.callId === event.call_id
            ? { ...part, status: event.ok === false ? 'failed' : 'done', result: event.result }
            : part,
        ),
      };
    }
    case 'tool_progress':
      return {
        ...turn,
        parts: turn.parts.map((part) =>
          part.kind === 'tool' && part.callId === event.call_id
            ? {
                ...part,
                progress:
                  event.text ??
                  Object.entries(event.detail ?? {})
                    .map(([key, value]) => `${key}: ${value}`)
                    .join(', '),
              }
            : part,
        ),
      };
    case 'hitl_required':
      return {
        ...turn,
        parts: [
          ...turn.parts,
          {
            kind: 'approval',
            id: event.id,
            tool: event.tool,
            arguments: event.arguments,
            expiresAt: event.expires_at,
            decision: null,
          },
        ],
      };
    case 'hitl_resolved':
      return {
        ...turn,
        parts: turn.parts.map((part) =>
          part.kind === 'approval' && part.id === event.id
            ? { ...part, decision: { approved: event.approved, by: event.by, reason: event.reason } }
            : part,
        ),
      };
    case 'iteration':
      return {
        ...turn,
        parts: [
          ...turn.parts,
          {
            kind: 'iteration',
            iteration: event.iteration,
            marker: event.marker,
            ...(event.stop ? { stop: event.stop } : {}),
          },
        ],
      };
    case 'cost':
      return {
        ...turn,
        status: 'done',
        stopped: event.stop === 'cancelled',
        cost: {
          credits: event.credits,
          costUsd: event.cost_usd,
          inputTokens: event.input_tokens,
          outputTokens: event.output_tokens,
          model: event.model,
        },
      };
    case 'error':
      return { ...turn, status: 'failed', error: event.message };
    default:
      return turn;
  }
}
