/**
 * The session chat's contract (spec 4.4 and 6): the request body, the SSE events of `/api/v1/chat/stream`, and what
 * a chat turn workflow takes and returns. Workflow-safe: no Node built-ins, no I/O.
 */
import { z } from 'zod';
import { reasoningEffortSchema, type ChatMessage, type ReasoningEffort, type Usage } from './chat.ts';
import type { Candidate, SequencedStreamEvent } from './completion.ts';
import type { PlanName } from './plans.ts';

export const defaultSessionKey = 'api:default';

/** Channels a client may name on the HTTP endpoints (messaging apps arrive through their webhooks). */
export const httpChannels = ['api', 'web'] as const;

export const chatRequestSchema = z
  .object({
    message: z.string().trim().min(1).max(32_000),
    session_id: z
      .string()
      .regex(/^[A-Za-z0-9:_.@-]{1,128}$/, 'must be 1-128 letters, digits or : _ . @ -')
      .default(defaultSessionKey),
    channel: z.enum(httpChannels).default('api'),
    model: z.string().min(1).optional(),
    /** Asks the model to reason (as on completions); what it exposes streams as `thinking` events. */
    reasoning_effort: reasoningEffortSchema.optional(),
  })
  .strict();

export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A turn's events as they travel (in-process hub and stream journal), beside its model calls' stream parts. */
export type ChatTurnEvent =
  | {
      type: 'turn-start';
      turnId: string;
      sessionId: string;
      model: string;
      agent?: RoutedAgent;
      /** A turn routed inside its workflow: how (kept in the journal, so a re-run routing step reuses it). */
      routing?: RoutingRecord;
    }
  | { type: 'memories-loaded'; memories: LoadedMemory[] }
  | { type: 'plan'; change: 'created' | 'step' | 'done'; steps: PlanStep[]; step?: PlanStep & { index: number } }
  | { type: 'tool-start'; callId: string; name: string; arguments: string }
  | { type: 'tool-result'; callId: string; name: string; ok: boolean; content: string }
  | { type: 'tool-progress'; callId: string; name: string; text?: string; detail?: Record<string, string> }
  | {
      type: 'approval-required';
      approvalId: string;
      callId: string;
      name: string;
      arguments: string;
      expiresAt: string;
    }
  | { type: 'approval-decided'; approvalId: string; approved: boolean; by: string; reason: string }
  | { type: 'iteration'; iteration: number; marker: 'continue' | 'done' | 'none'; stop?: LoopStop }
  | {
      type: 'turn-done';
      turnId: string;
      sessionId: string;
      model: string;
      usage: Usage;
      credits: number;
      response: string;
      /** What the turn cost at the serving models' list prices (USD). */
      costUsd?: number;
      iterations?: number;
      stop?: LoopStop;
    }
  | {
      type: 'turn-error';
      errorType: string;
      message: string;
      /** The routed agent needs a Google login the user has not given (the agent service answers 302 /auth/google). */
      login?: { agent: string; workspace: string };
    };

/** The agent a message was routed to, how, and how sure the router was (0..1). */
export interface RoutedAgent {
  id: string;
  name: string;
  confidence: number;
  method: 'model' | 'keywords' | 'preferred' | 'named';
}

/**
 * A turn routed inside its own workflow (the agent service's message for several candidate agents): the routing step
 * (`routeMessage`) asks the classifier, picks the agent, prepares its part of the turn and holds its first call.
 */
export interface TurnRouting {
  /** The agents the message may go to, as the classifier reads them; ties go to the first. */
  candidates: RoutingCandidate[];
  /**
   * The classifier's call: the router model's planned candidates, the turn's attempt 1 (its worst case held in the
   * turn's opening). Null: no model may classify for this caller (or its hold did not fit), and the keywords decide.
   */
  classifier: { model: string; candidates: Candidate[] } | null;
  /** The agent service's task queue, where the step runs when the turn's worker does not serve the agent service. */
  taskQueue: string;
  /**
   * The conversation's previous turn had ended when this one opened (or there was none): the routing step may read the
   * history and the memories itself, in its transaction, and start the routed agent's first call (RouteMessageInput.turn).
   */
  previousEnded?: boolean;
  /** The request as the agent service took it, for preparing the routed agent's part of the turn. */
  request: {
    /** The message has images (the turn's `images`): an agent whose model cannot see answers on the vision model. */
    hasImages?: boolean;
    presetInstruction?: string;
    extraTools?: Array<{ name: string; needsApproval: boolean }>;
  };
  /** The caller (its plan decides the routed agent's models): the API's Principal, as data. */
  principal: {
    userId: string;
    keyId: string | null;
    operator: boolean;
    plan: PlanName;
    customLimits: { per_hour?: number | null; per_day?: number | null; models?: string[] | 'all' } | null;
  };
}

export interface RoutingCandidate {
  id: string;
  name: string;
  description: string;
  keywords: string[];
}

/** What the routing step decided, and what its classifier call cost (the trace's `routing`, and the journal's). */
export interface RoutingRecord {
  scores: Record<string, number>;
  /** The classifier's call, when one answered. */
  call: {
    model: string;
    provider: string;
    usage: Usage;
    credits: number;
    costUsd: number;
    latencyMs: number;
  } | null;
  /** Why no classifier answered, when none did (the keywords decided). */
  fallback?: string;
}

/** The routing step's input: the turn's, as far as routing needs it. */
export interface RouteMessageInput {
  turnId: string;
  conversationId: string;
  sessionKey: string;
  userId: string;
  metered: boolean;
  message: string;
  routing: TurnRouting;
  /**
   * The turn's own input, given to the step when it runs in the turn's process (the local activity): with
   * `routing.previousEnded`, the step reads the history and the memories in its transaction, hands them back in the
   * setup (the turn then has no first step of its own), and starts the routed agent's first model call for the turn's
   * next local activity to adopt (workflows/turn-call.ts). Absent on the agent service's task queue.
   */
  turn?: ChatTurnInput;
}

/** The routed agent's part of the turn, merged into the turn's input. */
export type TurnSetup = Pick<
  ChatTurnInput,
  'requestedModel' | 'candidates' | 'tools' | 'historyBudgetTokens' | 'history' | 'openingMemories'
> & {
  agent: NonNullable<ChatTurnInput['agent']>;
};

export type RouteMessageResult = {
  routed: RoutedAgent;
  routing: RoutingRecord;
  /** The number of the routed agent's first model call (its hold taken): 2 after a classifier's call, else 1. */
  firstAttempt: number;
} & (
  | { setup: TurnSetup }
  /** The routed agent cannot answer this caller (no Google login, a model outside the plan, short of credits). */
  | { refusal: { errorType: string; message: string; login?: { agent: string; workspace: string } } }
);

/** A step of the plan an agent keeps with `update_plan`. */
export interface PlanStep {
  title: string;
  status: 'pending' | 'in_progress' | 'completed';
}

/** Why an agent loop stopped. */
export type LoopStop = 'done' | 'no_marker' | 'max_iterations' | 'budget' | 'cancelled';

/** An agent loop's bounds (`POST /chat/loop/{session_id}`). */
export interface LoopOptions {
  maxIterations: number;
  /** Credits the loop may spend (null: the account's balance is the only bound). */
  budgetCredits: number | null;
}

/** What a loop carries into its next run when it continues as new (the rest is in the conversation store). */
export interface LoopCarry {
  iteration: number;
  seq: number;
  nextAttempt: number;
  credits: number;
  costUsd: number;
  usage: Usage;
  model: string;
  /** Messages of this turn stored so far (their positions continue from here). */
  storedMessages: number;
  plan: PlanStep[];
  /** A cancellation that arrived while the previous run ended (signals are not carried over on their own). */
  cancelledBy?: string;
  /** The memories the first run loaded into the system prompt. */
  memories?: Array<{ content: string }>;
}

/**
 * The SSE events of `POST /api/v1/chat/stream`, each a `event: <name>` with a JSON `data:` line and an `id:` for
 * `Last-Event-ID`. These schemas are the documentation of their payloads (docs/session-chat-and-tools.md).
 */
export const chatStreamEvents = {
  start: z.object({ turn_id: z.string(), session_id: z.string(), model: z.string() }),
  content: z.object({ delta: z.string() }),
  thinking: z.object({ delta: z.string() }),
  tool_start: z.object({ call_id: z.string(), tool: z.string(), arguments: z.unknown() }),
  tool_result: z.object({
    call_id: z.string(),
    tool: z.string(),
    ok: z.boolean(),
    result: z.unknown().optional(),
    error: z.string().optional(),
  }),
  error: z.object({ type: z.string(), message: z.string() }),
  done: z.object({
    turn_id: z.string(),
    session_id: z.string(),
    model: z.string(),
    usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }),
    credits: z.number(),
  }),
} as const;

export type ChatStreamEventName = keyof typeof chatStreamEvents;

/** A tool as the turn offers it: what the model reads, and how a call runs (its local activity's options). */
export interface OfferedTool {
  name: string;
  /** A person approves each call first (the turn waits for the decision, up to `ChatTurnInput.approvalTimeout`). */
  needsApproval?: boolean;
  description: string;
  /** JSON schema of its arguments. */
  parameters: Record<string, unknown>;
  timeoutMs: number;
  maximumAttempts: number;
  initialIntervalMs: number;
}

export interface ChatTurnInput {
  /** The turn workflow's id, also its stream key. */
  turnId: string;
  conversationId: string;
  /** The session the message came through (its channel tags the messages). */
  sessionId: string;
  sessionKey: string;
  channel: string;
  turn: number;
  /** The turn before this one in the conversation, which must finish first; null for the first turn. */
  previousTurnId: string | null;
  message: string;
  /** The account charged (`guest` for guests, who are not metered). */
  userId: string;
  metered: boolean;
  requestedModel: string;
  candidates: Candidate[];
  stream: boolean;
  /** The reasoning effort every model call of the turn asks for (absent: none asked). */
  reasoningEffort?: ReasoningEffort;
  /** Tools offered to the model, by name. */
  tools: Record<string, OfferedTool>;
  /** Tokens the history may take (the first candidate's context window less room for the answer). */
  historyBudgetTokens: number;
  maxToolRounds: number;
  created: number;
  /** The agent service's agent for this turn: routed (`turn-start` says how), with its system prompt. */
  agent?: RoutedAgent & { systemPrompt: string; temperature?: number };
  /** Load the memories relevant to the message into the system prompt (the agent service; the account's). */
  memories?: { userId: string; limit: number };
  /** How long an approval request waits before it counts as rejected (ms). Default 15 minutes. */
  approvalTimeoutMs?: number;
  /** Who may decide approvals: the session's owner (`user:<id>`). */
  owner?: string;
  /** Images attached to the message (data: URLs), for a vision-capable model; not stored in the history. */
  images?: string[];
  /** An agent loop: iterations until `[[DONE]]` or a bound (see LoopOptions). */
  loop?: LoopOptions & { carry?: LoopCarry; iterationsPerRun: number };
  /**
   * The turn's opening (one transaction before the start) stored the user's message and journalled `turn-start`:
   * the turn's first step neither stores nor journals them again. Absent in turns started by earlier releases.
   */
  opened?: boolean;
  /**
   * The history the turn's first model call reads, the user's message last, when the opening read it (the previous
   * turn had ended, and the turn loads no memories): the turn has no first step. Absent, the first step waits for the
   * previous turn and reads it.
   */
  history?: ChatMessage[];
  /**
   * The memories relevant to the message, when the opening loaded them with the history (`memories` asked, the
   * previous turn ended): its `memories-loaded` event is journalled at position 1, and the agent's prompt shows them.
   */
  openingMemories?: LoadedMemory[];
  /**
   * Routed inside the turn: the first step picks the agent (`requestedModel`, `candidates`, `tools`, `agent` and
   * `historyBudgetTokens` are then the routed agent's; until then `requestedModel` is `auto` and the rest empty).
   */
  routing?: TurnRouting;
}

/** A memory loaded into an agent's turn, as its `memories-loaded` event and its prompt carry it. */
export interface LoadedMemory {
  id: string;
  content: string;
  importance: number;
}

/**
 * A turn's first events, as whoever reads its context journals them (its opening, its routing step or its first
 * step): `turn-start`, then `memories-loaded` when the turn loaded memories.
 */
export function openingEvents(start: ChatTurnEvent, memories?: LoadedMemory[]): SequencedStreamEvent[] {
  const events: SequencedStreamEvent[] = [{ seq: 0, event: start }];
  if (memories) events.push({ seq: 1, event: { type: 'memories-loaded', memories } satisfies ChatTurnEvent });
  return events;
}

/** A turn's first event: what a response shows before anything else (the agent service's `routed`). */
export function turnStartEvent(turn: {
  turnId: string;
  sessionKey: string;
  model: string;
  agent?: RoutedAgent | undefined;
  routing?: RoutingRecord;
}): ChatTurnEvent {
  return {
    type: 'turn-start',
    turnId: turn.turnId,
    sessionId: turn.sessionKey,
    model: turn.model,
    ...(turn.routing ? { routing: turn.routing } : {}),
    ...(turn.agent
      ? {
          agent: {
            id: turn.agent.id,
            name: turn.agent.name,
            confidence: turn.agent.confidence,
            method: turn.agent.method,
          },
        }
      : {}),
  };
}

/** A decision on a tool call waiting for approval, delivered to the turn as a Temporal update. */
export interface ApprovalDecision {
  approvalId: string;
  approve: boolean;
  /** Who decided: the session's owner (`user:<id>`). */
  by: string;
  reason?: string;
}

export interface ChatTurnResult {
  turnId: string;
  response: string;
  model: string;
  usage: Usage;
  credits: number;
  toolCalls: number;
}

/** Workflow id of a conversation's nth turn. */
/** A chat turn's id as clients send it back (`replaces_turn`, a branch to show): `chat-<conversation>-<number>`. */
export const chatTurnIdPattern = /^chat-conv_[A-Za-z0-9_-]{1,64}-[1-9][0-9]{0,8}$/;

export function chatTurnWorkflowId(conversationId: string, turn: number): string {
  return `chat-${conversationId}-${turn}`;
}
