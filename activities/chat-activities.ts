/**
 * The chat turn workflow's activities (workflows/chat-turn.workflow.ts), local activities in the process that runs
 * the turn: beginning a turn (waiting for the conversation's previous turn, storing the user's message, loading the
 * history the model may see), running a tool call, and finishing the turn (storing what it added). Each tells the
 * turn's stream what happened: the in-process hub for a response waiting here, the journal for everyone else.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ChatMessage } from '../common/chat.ts';
import { isDeterministicDatabaseError } from '../db/errors.ts';
import { storeOutagesAsFailures } from './failures.ts';
import {
  openingEvents,
  turnStartEvent,
  type ChatTurnEvent,
  type LoadedMemory,
  type RouteMessageInput,
  type RouteMessageResult,
  type RoutedAgent,
} from '../common/chat-turn.ts';
import type { SequencedStreamEvent } from '../common/completion.ts';
import type { ConversationStore, StoredMessage, TurnTarget } from './conversations/conversation-store.ts';
import { countPromptTokens } from './credits/tokens.ts';
import { readTurnContext, trimHistory, type TurnContextStores } from './conversations/history.ts';
import { agentToolCalls } from './agent-metrics.ts';
import { turnClosed } from './conversations/turn-closer.ts';
import type { TurnStops } from './streaming/turn-stops.ts';
import type { StreamHub } from './streaming/stream-hub.ts';
import type { StreamJournal } from './streaming/stream-journal.ts';
import { toolByName } from './tools/index.ts';
import { runTool } from './tools/runtime.ts';
import { ToolError, type ToolProgress, type ToolServices } from './tools/tool.ts';
import type { ToolSettings } from '../config/tool-settings.ts';

export interface ChatActivityDependencies {
  conversations: ConversationStore;
  hub: StreamHub;
  journal: StreamJournal;
  toolSettings: ToolSettings;
  /** Whether a workflow still runs (a predecessor turn whose row says running may have been terminated). */
  isRunning(workflowId: string): Promise<boolean>;
  /** The agent service's memories: those relevant to a message are loaded into the agent's context. */
  memories?: TurnContextStores['memories'];
  /** What tools with outside effects use (memories, mail). */
  toolServices?: ToolServices;
  /** The agent service's routing step, set by the agent service in the processes that serve it (api/agents/app.ts). */
  agentRouting?: AgentRoutingSlot;
  /** Where a stoppable turn's tool call hears that a person stopped the turn (streaming/turn-stops.ts). */
  stops?: TurnStops;
}

/**
 * Where the agent service puts its routing step (AgentChat.route: its agent catalogue and turn preparation are the
 * API's). A process without it (the background worker) answers the `routeMessage` activity with `RouteElsewhere`, and
 * the turn runs the step on the agent service's task queue instead.
 */
export interface AgentRoutingSlot {
  route?: (input: RouteMessageInput, signal: AbortSignal) => Promise<RouteMessageResult>;
}

/** The failure type of a routing step asked of a process that does not serve the agent service. */
export const routeElsewhere = 'RouteElsewhere';

/** Checked this often while the previous turn runs; its workflow is asked about after `stuckAfterMs`. */
const predecessorPollMs = 100;
const stuckAfterMs = 30_000;

export function createChatActivities(dependencies: ChatActivityDependencies) {
  const { conversations, hub, journal } = dependencies;

  /** Publishes events on the turn's stream: to a response waiting in this process, and durably to the journal. */
  const publish = async (turnId: string, events: SequencedStreamEvent[]) => {
    const writer = journal.writer(turnId);
    for (const event of events) {
      hub.publish(turnId, event);
      writer.append(event);
    }
    await writer.close();
  };

  const steps = {
    /**
     * Waits until the conversation's previous turn finished (so this turn sees its answer), stores the user's
     * message, and returns the history the model reads: the newest messages that fit the budget, dropped from the
     * oldest, an assistant message and the tool results answering it kept or dropped together.
     */
    async beginTurn(
      input: TurnTarget & {
        previousTurnId: string | null;
        sessionKey: string;
        message: string;
        model: string;
        historyBudgetTokens: number;
        agent?: RoutedAgent;
        memories?: { userId: string; limit: number };
        /**
         * The turn's opening stored the message and journalled `turn-start` already (ChatService.prepare, or the
         * routing step): they go to the waiting response only, and `memories-loaded` comes back in `unjournaled`,
         * for the turn's first model call to journal with its own events.
         */
        opened?: boolean;
      },
    ): Promise<{
      messages: ChatMessage[];
      memories: LoadedMemory[];
      nextSeq: number;
      unjournaled?: SequencedStreamEvent[];
    }> {
      if (input.previousTurnId) await waitForTurn(input.previousTurnId);
      if (!input.opened) await conversations.appendMessages(input, [{ role: 'user', content: input.message }], 0);
      const context = await readTurnContext(dependencies, input, input.historyBudgetTokens);
      const events = openingEvents(turnStartEvent({ ...input, agent: input.agent }), context.memories);
      if (input.opened) for (const event of events) hub.publish(input.turnId, event);
      else await publish(input.turnId, events);
      return {
        messages: context.history,
        memories: context.memories ?? [],
        nextSeq: events.length,
        ...(input.opened ? { unjournaled: events.slice(1) } : {}),
      };
    },

    /**
     * The routing step of a turn that routes its message (the agent service's, see AgentRoutingSlot): which agent
     * answers, what the classifier's call cost, and the agent's part of the turn (or the refusal the turn ends with).
     */
    async routeMessage(input: RouteMessageInput): Promise<RouteMessageResult> {
      const route = dependencies.agentRouting?.route;
      if (!route) {
        throw ApplicationFailure.nonRetryable(
          'This process does not serve the agent service: the routing step runs on its task queue',
          routeElsewhere,
        );
      }
      return route(input, Context.current().cancellationSignal);
    },

    /**
     * The context of a loop turn that continued as new: the history before it (trimmed to the budget) and everything
     * this turn stored so far, in order.
     */
    async resumeTurn(input: {
      conversationId: string;
      turn: number;
      historyBudgetTokens: number;
    }): Promise<{ messages: ChatMessage[] }> {
      const earlier = await conversations.history(input.conversationId, input.turn);
      const own = (await conversations.history(input.conversationId, input.turn, undefined, true)).slice(
        earlier.length,
      );
      const kept = trimHistory(earlier, input.historyBudgetTokens - countPromptTokens(own));
      return { messages: [...kept, ...own] };
    },

    /** Stores messages of a turn still running (a loop's finished iterations) from position `firstSeq` on. */
    async storeMessages(input: TurnTarget & { messages: StoredMessage[]; firstSeq: number }): Promise<void> {
      await conversations.appendMessages(input, input.messages, input.firstSeq);
    },

    /** Publishes events the workflow itself produces (plans, approvals, iterations) at their positions. */
    async publishEvents(input: { turnId: string; events: SequencedStreamEvent[] }): Promise<void> {
      // A wait for a person's approval is recorded on the turn while it lasts (GET /metrics counts them).
      for (const { event } of input.events as Array<{ event: ChatTurnEvent }>) {
        if (event.type === 'approval-required')
          await conversations.markApproval(input.turnId, new Date(event.expiresAt));
        if (event.type === 'approval-decided') await conversations.markApproval(input.turnId, null);
      }
      await publish(input.turnId, input.events);
    },

    /**
     * Runs one tool call the model asked for. Its start goes on the turn's stream at `seq`, then any progress it
     * reports, then its result; the answer names the next free position (`nextSeq`). A retryable failure (timeout, upstream trouble) is thrown for the workflow's retry policy, any other comes
     * back as the tool's result, for the model to read.
     */
    async runToolCall(input: {
      turnId: string;
      conversationId: string;
      callId: string;
      name: string;
      arguments: string;
      seq: number;
      userId?: string | null;
      /** Tools the turn offers beyond the gateway's defaults (the agent's agents-only tools). */
      agentTools?: boolean;
      /** A turn a person may stop (not a loop): stopped, the call ends at once as not done (`stopped`). */
      stoppable?: boolean;
    }): Promise<{ ok: boolean; content: string; nextSeq?: number; stopped?: boolean }> {
      // What this call already put on the stream (a worker that died mid-call, or an earlier attempt): a result
      // there is the outcome, and the tool is not run again; progress there is handed back to the tool, so it can
      // pick up where it was (a delegation resubscribes to its remote task), and its positions are not reused.
      const earlier = (await journal.read(input.turnId, input.seq - 1))
        .map((item) => ({ seq: item.seq, event: item.event as ChatTurnEvent }))
        .filter(({ event }) => 'callId' in event && event.callId === input.callId);
      const recorded = earlier.find(({ event }) => event.type === 'tool-result');
      if (recorded?.event.type === 'tool-result') {
        return { ok: recorded.event.ok, content: recorded.event.content, nextSeq: recorded.seq + 1 };
      }
      const earlierProgress = earlier.flatMap(({ event }) =>
        event.type === 'tool-progress'
          ? [
              {
                ...(event.text !== undefined ? { text: event.text } : {}),
                ...(event.detail ? { detail: event.detail } : {}),
              },
            ]
          : [],
      );
      let next = Math.max(input.seq + 1, ...earlier.map(({ seq }) => seq + 1));
      if (!earlier.some(({ event }) => event.type === 'tool-start')) {
        const start: ChatTurnEvent = {
          type: 'tool-start',
          callId: input.callId,
          name: input.name,
          arguments: input.arguments,
        };
        await publish(input.turnId, [{ seq: input.seq, event: start }]);
      }
      const progress = async (update: ToolProgress) => {
        const event: ChatTurnEvent = { type: 'tool-progress', callId: input.callId, name: input.name, ...update };
        await publish(input.turnId, [{ seq: next++, event }]);
      };
      const tool = toolByName(input.name);
      let outcome: { ok: boolean; content: string; stopped?: boolean };
      // Counted for the agent service's turns (their tools are the agent's own); the label is the tool's name only
      // when it is a tool, so a model inventing names cannot grow the metric without bound.
      const count = (label: string) => {
        if (input.agentTools) agentToolCalls.inc({ tool: tool ? input.name : 'unknown', outcome: label });
      };
      if (!tool || !tool.configured(dependencies.toolSettings) || (tool.agentsOnly && !input.agentTools)) {
        outcome = { ok: false, content: `There is no tool named ${input.name}` };
        count('unknown');
      } else {
        const stop = input.stoppable ? dependencies.stops?.watch(input.turnId) : undefined;
        const cancelled = Context.current().cancellationSignal;
        try {
          // Stopped (before or during the call), the call ends at once, as a cancelled one does (runtime.ts).
          outcome = await runTool(
            tool,
            input.arguments,
            {
              conversationId: input.conversationId,
              settings: dependencies.toolSettings,
              userId: input.userId ?? null,
              callKey: `${input.turnId}:${input.callId}`,
              services: dependencies.toolServices ?? {},
              progress,
              earlierProgress,
            },
            stop ? AbortSignal.any([cancelled, stop.signal]) : cancelled,
          );
          // (A call that finished before the stop keeps its result.)
          if (stop?.signal.aborted && !outcome.ok) outcome = stoppedOutcome(input.name);
          // Cancelled by Temporal, not by a person: the run was pushed out of this worker's cache (a workflow task the
          // server timed out on a busy machine, a full cache), its worker is stopping, or the call ran past its
          // activity's deadline. That is no answer of the tool's, and nothing is journalled: the turn, replayed,
          // makes the call again (and finds the progress above), or Temporal's timeout rules apply. Journalled, the
          // cancellation read back as the tool's result ("the call was cancelled") when the run was replayed. (A call
          // that finished first keeps its result, journalled below, so that a replay does not run it again.)
          else if (cancelled.aborted && !outcome.ok) throw cancelled.reason;
        } catch (error) {
          if (error instanceof ToolError && error.retryable) {
            const info = Context.current().info;
            const lastTry = info.attempt >= (info.retryPolicy?.maximumAttempts ?? 1);
            if (!lastTry) {
              count('retried');
              throw ApplicationFailure.retryable(error.message, 'ToolRetryable');
            }
            outcome = { ok: false, content: `${input.name}: ${error.message}` };
          } else {
            throw error;
          }
        } finally {
          stop?.release();
        }
        count(outcome.ok ? 'ok' : 'error');
      }
      const { stopped, ...result } = outcome;
      const event: ChatTurnEvent = { type: 'tool-result', callId: input.callId, name: input.name, ...result };
      await publish(input.turnId, [{ seq: next, event }]);
      return { ...result, nextSeq: next + 1, ...(stopped ? { stopped } : {}) };
    },

    /**
     * Stores what the turn added after the user's message, closes the turn and ends its stream: the messages, the
     * status and the last event (with any event not journalled yet, `unjournaled`) in one transaction; the waiting
     * response gets the last event once it is committed.
     */
    async finishTurn(
      input: TurnTarget & {
        status: 'done' | 'failed';
        messages: StoredMessage[];
        seq: number;
        final: ChatTurnEvent;
        /** Position of the first message (a loop stored its earlier iterations already). Default 1. */
        firstSeq?: number;
        /** Events the waiting response had but the journal may not (a turn that failed before its first call). */
        unjournaled?: SequencedStreamEvent[];
      },
    ): Promise<void> {
      const last: SequencedStreamEvent = { seq: input.seq, event: input.final };
      const finished = await conversations.closeTurn(input, {
        messages: input.messages,
        firstSeq: input.firstSeq ?? 1,
        status: input.status,
        journal: (client) => journal.write(client, input.turnId, [...(input.unjournaled ?? []), last]),
      });
      turnClosed(hub, input.turnId, last, finished, input.status);
    },
  };
  const { runToolCall, ...storageSteps } = steps;
  return {
    ...endOnDeterministicFailures(storageSteps),
    // A store outage (the journal's read or write around the tool) is thrown as `StoreUnavailable`: the turn waits it
    // out and calls again (workflows/store-outages.ts), and the call then finds on the stream what it had done.
    runToolCall: (input: Parameters<typeof runToolCall>[0]) => storeOutagesAsFailures(() => runToolCall(input)),
  };

  /** Resolves once the turn is no longer running (or was never recorded, or its workflow is gone). */
  async function waitForTurn(turnId: string): Promise<void> {
    for (;;) {
      const status = await conversations.turnStatus(turnId);
      if (!status || status.status !== 'running') return;
      if (status.ageMs > stuckAfterMs && !(await dependencies.isRunning(turnId))) return;
      await new Promise((resolve) => setTimeout(resolve, predecessorPollMs));
    }
  }
}

export type ChatActivities = ReturnType<typeof createChatActivities>;

/**
 * The turn's storage steps, with a failure that a retry would only repeat (a database refusing the values, see
 * db/errors.ts) made non-retryable, as `invalid_request`: the turn then ends failed, releases its hold and lets the
 * conversation's next turn run, instead of retrying for ever while every later message waits behind it. Other
 * failures (the database unreachable, a restart) are retried as before: nothing accepted is dropped for them.
 */
function endOnDeterministicFailures<Steps extends Record<string, (input: never) => Promise<unknown>>>(
  steps: Steps,
): Steps {
  const wrapped: Record<string, (input: never) => Promise<unknown>> = {};
  for (const [name, step] of Object.entries(steps)) {
    wrapped[name] = async (input: never) => {
      try {
        return await step(input);
      } catch (error) {
        if (!isDeterministicDatabaseError(error)) throw error;
        throw ApplicationFailure.nonRetryable(
          `This turn's text cannot be stored (${error.message}), so the turn ended`,
          'invalid_request',
        );
      }
    };
  }
  return wrapped as Steps;
}

/** What a tool call stopped by a person answers (on the stream, and in the history the model reads next turn). */
function stoppedOutcome(tool: string): { ok: false; content: string; stopped: true } {
  return { ok: false, content: `${tool}: stopped by the user before it finished`, stopped: true };
}
