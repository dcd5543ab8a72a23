/**
 * An agent run for an owner, started by something other than the owner's own browser (a scheduled task's firing, an
 * inbound webhook's delivery): the turn is prepared for the owner in the agent service's process (credits held, the
 * agent's tools and approval rules), runs as a child `chatTurn`, and its answer is delivered to messaging app chats
 * by the messengers' activity, keyed once per run and chat. What the workflows (workflows/agent-run.ts) and the
 * preparing activities (api/services/agent-runs/prepare.ts) share. Workflow-safe: no zod, no I/O.
 */
import type { MessengerTarget } from './messengers.ts';
import type { ChatTurnInput } from './chat-turn.ts';

/** A prepared run: the turn, ready to run as a child workflow, and the chats its answer also goes to. */
export interface PreparedAgentTurn {
  kind: 'turn';
  turn: ChatTurnInput;
  agentName: string;
  deliverTo: MessengerTarget[];
}

/** The turn was refused before it started (no credits, agent gone, model not in the plan). */
export interface RefusedAgentTurn {
  kind: 'refused';
  errorType: string;
  message: string;
  turnId: string | null;
}

/**
 * The send of a run's answer to one chat: its `messenger_events` row and idempotency key (sent once). `origin` names
 * what started the run (`schedule`, `webhook`), `name` the answer (the turn's id, or the run's for a reply without a
 * turn).
 */
export function runDeliveryId(origin: string, name: string, chat: MessengerTarget): string {
  return `${origin}:${name}:${chat.platform}:${chat.to}`;
}
