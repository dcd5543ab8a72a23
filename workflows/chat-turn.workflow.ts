/**
 * chatTurn: one turn of a conversation, from the user's message to the answer (workflow id
 * `chat-<conversation>-<turn>`). It waits for the conversation's previous turn, loads the history that fits the
 * model, calls the model through the same failover and credit saga as completions, runs the tool calls the model
 * asks for (each a local activity with the tool's own timeout and retry policy; a tool that ran is recorded and not
 * run again on replay), and loops until the model answers: at most `maxToolRounds` rounds with tools, then one more
 * without them. What the turn added is stored when it ends; its events stream as it goes (never through history).
 *
 * The same workflow serves the agent service (input `agent`): the routed agent's system prompt, the memories
 * relevant to the message, tools that need a person's approval (the turn waits for the `decideApproval` update, up to
 * a durable deadline, then counts silence as a rejection), plans the agent keeps with `update_plan`, and the cost at
 * list prices. With `loop` the turn is an agent loop: it works in iterations, each ending with `[[CONTINUE]]` or
 * `[[DONE]]`, until done, a bound or a cancel (`cancelTurn`); it stores each iteration as it ends and continues as new
 * every `iterationsPerRun` iterations, so its history stays small however long it runs.
 *
 * With `routing` (the agent service's message for several agents) the turn routes its message itself: its first step,
 * the `routeMessage` activity, calls the classifier as the turn's attempt 1, picks the agent and returns the agent's
 * part of the turn (or the refusal the turn ends with); the decision and its cost are that step's result in history
 * and the trace's `routing`. One workflow per message. Turns opened by the API (`opened`) find their message stored
 * and their start journalled: their first step writes nothing, and the close is one transaction.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  ContinueAsNew,
  continueAsNew,
  defineQuery,
  defineUpdate,
  patched,
  proxyLocalActivities,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { waitingOutStoreOutages } from './store-outages.ts';
import type { ChatActivities } from '../activities/chat-activities.ts';
import type { StoredMessage } from '../activities/conversations/conversation-store.ts';
import type { ChatMessage, ToolCall, Usage } from '../common/chat.ts';
import { approvalId as approvalIdOf, loopContinuePrompt, loopMarker } from '../common/agent-turn.ts';
import type {
  ApprovalDecision,
  ChatTurnEvent,
  ChatTurnInput,
  ChatTurnResult,
  LoopCarry,
  LoopStop,
  PlanStep,
  RouteMessageInput,
  RouteMessageResult,
  RoutedAgent,
  RoutingRecord,
} from '../common/chat-turn.ts';
import { modelKey } from '../common/search-attributes.ts';
import type { SequencedStreamEvent } from '../common/completion.ts';
import type { Attempt, CompletionFailureDetails } from '../common/completion.ts';
import { addModelCall, turnDoneEvent } from '../common/turn-totals.ts';
import { callWithFailover, modelCallFailure, releaseUnusedHold } from './model-call.ts';
import { releaseCapacity, waitForCapacity } from './capacity.ts';
import {
  offeredTools,
  openingMessages,
  openingNextSeq,
  turnCall,
  turnTarget,
  withImages,
  withSystemPrompt,
} from './turn-call.ts';

// Beginning waits for the previous turn of the conversation (bounded by that turn's own bounds); the rest are
// idempotent writes, retried until the database answers.
const { beginTurn, finishTurn, resumeTurn, storeMessages, publishEvents } = proxyLocalActivities<ChatActivities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

// The routing step (a turn that routes its message): the classifier's call and a transaction, retried until they
// answer; a re-run keeps the decision it journalled.
const { routeMessage } = proxyLocalActivities<ChatActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/** The routing step as the agent service serves it on its own task queue (api/agents/app.ts). */
export interface RoutingActivities {
  routeMessage(input: RouteMessageInput): Promise<RouteMessageResult>;
}

// A loop's finished iteration is stored by a regular activity, which ends the workflow task (see below).
const { storeMessages: storeIteration } = proxyActivities<ChatActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

export interface ChatTurnTrace {
  status: 'running';
  attempts: Attempt[];
  toolCalls: Array<{ name: string; ok: boolean }>;
  /** The tool call waiting for a person's decision, if any. */
  pendingApproval: { approvalId: string; tool: string; expiresAt: string } | null;
  iteration: number;
  /** A turn that routed its message: the agent it chose, how, and what the classifier's call cost. */
  routing?: RoutedAgent & RoutingRecord;
}

export const chatTurnTraceQuery = defineQuery<ChatTurnTrace>('trace');

/** A person's decision on a tool call waiting for approval; refused unless that call waits and `by` owns the turn. */
export const decideApprovalUpdate = defineUpdate<{ approved: boolean }, [ApprovalDecision]>('decideApproval');

/**
 * Stops an agent loop after its current iteration; only the session's owner may. An update rather than a signal: a
 * signal that arrives while a workflow task runs makes the server refuse that task's commands, and a loop's task runs
 * a whole iteration of local activities, whose events the client already saw; an update waits for the task to end.
 */
export const cancelLoopUpdate = defineUpdate<{ cancelling: boolean }, [{ by: string }]>('cancelLoop');

/**
 * Stop (`POST /chat/turns/{id}/cancel`), from the session's owner. A loop stops after its current iteration, as with
 * `cancelLoop`. Any other turn stops now: the step it is in ends early (the API also tells that step directly,
 * activities/streaming/turn-stops.ts, since an update reaches a workflow only between workflow tasks), no further
 * model call or tool call is made, a tool waiting for approval counts as rejected, and the turn ends with what was
 * streamed so far, `turn-done` with `stop: 'cancelled'`, its credits settled at what it used.
 */
export const cancelTurnUpdate = defineUpdate<{ cancelling: boolean }, [{ by: string }]>('cancelTurn');

const defaultApprovalTimeoutMs = 15 * 60_000;

export async function chatTurn(started: ChatTurnInput): Promise<ChatTurnResult> {
  // A turn that routes its message becomes its routed agent's turn after its first step.
  let input = started;
  let routing: ChatTurnTrace['routing'];
  const carry = input.loop?.carry;
  const attempts: Attempt[] = [];
  const toolCalls: ChatTurnTrace['toolCalls'] = [];
  let pending: (ChatTurnTrace['pendingApproval'] & { decision?: ApprovalDecision }) | null = null;
  const decided = new Set<string>();
  let cancelled: { by: string } | null = carry?.cancelledBy ? { by: carry.cancelledBy } : null;
  let iteration = carry?.iteration ?? 1;
  /** A loop's iteration holds a slot of the capacity queue (taken between iterations; a run continued as new holds it). */
  let holdingSlot = !!carry && patched('capacity-queue-loop');
  setHandler(chatTurnTraceQuery, () => ({
    status: 'running',
    attempts,
    toolCalls,
    pendingApproval: pending && { approvalId: pending.approvalId, tool: pending.tool, expiresAt: pending.expiresAt },
    iteration,
    ...(routing ? { routing } : {}),
  }));
  setHandler(
    decideApprovalUpdate,
    (decision) => {
      pending!.decision = decision;
      return { approved: decision.approve };
    },
    {
      validator: (decision) => {
        if (decided.has(decision.approvalId)) {
          throw ApplicationFailure.create({ type: 'conflict', message: 'This approval was already decided' });
        }
        if (!pending || pending.approvalId !== decision.approvalId || pending.decision) {
          throw ApplicationFailure.create({
            type: 'not_found',
            message: `No approval ${decision.approvalId} is waiting`,
          });
        }
        if (!input.owner || decision.by !== input.owner) {
          throw ApplicationFailure.create({
            type: 'permission_denied',
            message: "Only the session's owner may decide",
          });
        }
      },
    },
  );
  const requestCancel = (request: { by: string }) => {
    cancelled ??= request;
    return { cancelling: true };
  };
  setHandler(cancelLoopUpdate, requestCancel, {
    validator: (request) => {
      if (!input.loop) throw ApplicationFailure.create({ type: 'conflict', message: 'This turn is not a loop' });
      if (!input.owner || request.by !== input.owner) {
        throw ApplicationFailure.create({ type: 'not_found', message: 'No such loop' });
      }
    },
  });
  setHandler(cancelTurnUpdate, requestCancel, {
    validator: (request) => {
      if (!input.owner || request.by !== input.owner) {
        throw ApplicationFailure.create({ type: 'not_found', message: 'No such turn' });
      }
    },
  });
  /** A turn that is not a loop, stopped by its owner: no further step is taken. */
  const stopNow = () => cancelled !== null && !input.loop;
  // Whether this turn was stopped by a person (its answer is what was streamed before): by the update, or seen by the
  // step it stopped (which may end before the update reaches the workflow).
  let stoppedByUser = false;
  const stopped = () => (stoppedByUser ||= stopNow());
  const target = turnTarget(input);
  // Messages of this turn not stored yet, and how many are (a loop stores each iteration as it ends).
  let added: StoredMessage[] = [];
  let stored = carry?.storedMessages ?? 0;
  let seq = carry?.seq ?? 1;
  const publish = async (events: ChatTurnEvent[]) => {
    const sequenced: SequencedStreamEvent[] = events.map((event) => ({ seq: seq++, event }));
    await publishEvents({ turnId: input.turnId, events: sequenced });
  };
  // The number the turn's next model call takes (a loop continued as new carries it on).
  let nextAttempt = carry?.nextAttempt ?? 1;
  // Events the waiting response has and the journal may not yet (an opened turn's `memories-loaded`): the first model
  // call journals them with its own, the close with the last event when no call did.
  let unjournaled: SequencedStreamEvent[] = [];
  // The attempt whose hold was taken before its call: 1 (the turn's opening), or the routed agent's first.
  let heldAttempt = 1;
  try {
    if (input.routing) {
      const routed = await routeStep({
        turnId: input.turnId,
        conversationId: input.conversationId,
        sessionKey: input.sessionKey,
        userId: input.userId,
        metered: input.metered,
        message: input.message,
        routing: input.routing,
        ...(input.routing.previousEnded ? { turn: input } : {}),
      });
      routing = { ...routed.routed, ...routed.routing };
      nextAttempt = routed.firstAttempt;
      heldAttempt = routed.firstAttempt;
      if ('refusal' in routed) {
        const { errorType, message, login } = routed.refusal;
        throw ApplicationFailure.create({
          type: errorType,
          message,
          nonRetryable: true,
          details: login ? [{ login }] : [],
        });
      }
      const { routing: _routed, ...rest } = input;
      input = { ...rest, ...routed.setup };
      upsertSearchAttributes([{ key: modelKey, value: input.requestedModel }]);
    }
    if (input.candidates.length === 0) {
      throw modelCallFailure('upstream_error', 'No provider is available for this model', attempts);
    }
    let messages: ChatMessage[];
    let memories: Array<{ content: string }> = carry?.memories ?? [];
    if (carry) {
      ({ messages } = await resumeTurn({
        conversationId: input.conversationId,
        turn: input.turn,
        historyBudgetTokens: input.historyBudgetTokens,
      }));
    } else if (input.history) {
      // Opened with its history (the previous turn had ended): no first step. The API gave the waiting response the
      // start event (and the memories found), journalled by the opening, and started the first call (turn-call.ts).
      messages = openingMessages({ ...input, history: input.history });
      memories = input.openingMemories ?? [];
      seq = openingNextSeq(input);
    } else {
      const begun = await beginTurn({
        ...target,
        previousTurnId: input.previousTurnId,
        sessionKey: input.sessionKey,
        message: input.message,
        model: input.requestedModel,
        historyBudgetTokens: input.historyBudgetTokens,
        ...(input.agent
          ? {
              agent: {
                id: input.agent.id,
                name: input.agent.name,
                confidence: input.agent.confidence,
                method: input.agent.method,
              },
            }
          : {}),
        ...(input.memories ? { memories: input.memories } : {}),
        ...(input.opened ? { opened: true } : {}),
      });
      seq = begun.nextSeq;
      unjournaled = begun.unjournaled ?? [];
      messages = input.images?.length ? withImages(begun.messages, input.images) : [...begun.messages];
      memories = begun.memories.map(({ content }) => ({ content }));
    }
    withSystemPrompt(input, messages, memories);
    const offered = offeredTools(input);
    let credits = carry?.credits ?? 0;
    let costUsd = carry?.costUsd ?? 0;
    let usage: Usage = carry?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let model = carry?.model ?? input.requestedModel;
    let plan: PlanStep[] = carry?.plan ?? [];
    let response = '';
    let stop: LoopStop | undefined;

    // Whether the turn made a model call yet (the first one's hold was taken by the API).
    let calledModel = false;
    // The turn's last model call closed the turn itself (its answer asked for no tool): no close step follows.
    let closedByCall = false;
    /** One model call with failover, its usage, credits and cost added to the turn's. */
    const callModel = async (withTools: boolean) => {
      if (stopNow()) {
        // Stopped before the call: none is made. The first call's hold, taken before the turn began, is lifted.
        if (!calledModel && input.metered) {
          await releaseUnusedHold({ userId: input.userId, workflowId: input.turnId, attempt: heldAttempt });
        }
        stoppedByUser = true;
        return { content: '', toolCalls: [] };
      }
      calledModel = true;
      const { request, extra } = turnCall(
        input,
        {
          messages,
          withTools,
          seq,
          heldAttempt,
          unjournaled,
          added,
          firstSeq: stored + 1,
          totals: { model, usage, credits, costUsd },
        },
        offered,
      );
      const served = await callWithFailover(
        {
          requestId: input.turnId,
          userId: input.userId,
          created: input.created,
          request,
          candidates: input.candidates,
          metered: input.metered,
        },
        {
          metered: input.metered,
          attempts,
          workflowId: input.turnId,
          firstAttempt: nextAttempt,
          extra,
        },
      );
      if (served.stopped) stoppedByUser = true;
      if (served.turnClosed) closedByCall = true;
      unjournaled = [];
      nextAttempt = served.nextAttempt;
      seq = served.nextSeq ?? seq;
      ({ model, usage, credits, costUsd } = addModelCall(
        { model, usage, credits, costUsd },
        { candidate: served.candidate, usage: served.usage, metered: input.metered },
      ));
      return served.message ?? { content: '', toolCalls: [] };
    };

    /** Runs one tool call, after a person approved it when the tool needs approval; its result for the model. */
    const runCall = async (call: ToolCall): Promise<{ ok: boolean; content: string }> => {
      const policy = input.tools[call.function.name];
      if (policy?.needsApproval) {
        const id = approvalIdOf(input.turnId, seq);
        const timeoutMs = input.approvalTimeoutMs ?? defaultApprovalTimeoutMs;
        const expiresAt = new Date(Date.now() + timeoutMs).toISOString();
        pending = { approvalId: id, tool: call.function.name, expiresAt };
        await publish([
          {
            type: 'approval-required',
            approvalId: id,
            callId: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
            expiresAt,
          },
        ]);
        const answered = await condition(() => pending?.decision !== undefined || stopNow(), timeoutMs);
        const decision: ApprovalDecision =
          answered && pending.decision
            ? pending.decision
            : answered
              ? { approvalId: id, approve: false, by: cancelled!.by, reason: 'the user stopped the turn' }
              : { approvalId: id, approve: false, by: 'timeout', reason: 'nobody answered before the deadline' };
        decided.add(id);
        pending = null;
        await publish([
          {
            type: 'approval-decided',
            approvalId: id,
            approved: decision.approve,
            by: decision.by,
            reason: decision.reason ?? '',
          },
        ]);
        if (!decision.approve) {
          const content = `The user did not approve this ${call.function.name} call${decision.reason ? ` (${decision.reason})` : ''}; it was not run.`;
          await publish([
            { type: 'tool-start', callId: call.id, name: call.function.name, arguments: call.function.arguments },
            { type: 'tool-result', callId: call.id, name: call.function.name, ok: false, content },
          ]);
          return { ok: false, content };
        }
      }
      const { runToolCall } = proxyLocalActivities<ChatActivities>({
        // The tool's own deadline is enforced inside; this one only bounds a stuck activity.
        startToCloseTimeout: `${(policy?.timeoutMs ?? 30_000) + 10_000}ms`,
        retry: {
          maximumAttempts: policy?.maximumAttempts ?? 1,
          initialInterval: `${Math.max(policy?.initialIntervalMs ?? 500, 1)}ms`,
        },
      });
      // A call to a tool the turn does not offer (a confused model, or a prompt asking for another agent's tool)
      // is answered as an unknown tool and never run.
      // An outage of the platform's database around the call (its journal) is waited out, the call then made again.
      const outcome = policy
        ? await waitingOutStoreOutages(() =>
            runToolCall({
              turnId: input.turnId,
              conversationId: input.conversationId,
              callId: call.id,
              name: call.function.name,
              arguments: call.function.arguments,
              seq,
              userId: input.userId === 'guest' ? null : input.userId,
              agentTools: !!input.agent,
              ...(input.loop ? {} : { stoppable: true }),
            }),
          )
        : await refuseUnknown(call, seq);
      if ((outcome as { stopped?: boolean }).stopped) stoppedByUser = true;
      // A tool that reported progress used more positions (`nextSeq`); older recorded results name none.
      seq = (outcome as { nextSeq?: number }).nextSeq ?? seq + 2;
      if (outcome.ok && call.function.name === 'update_plan') {
        const changes = planChanges(plan, call.function.arguments);
        plan = changes.steps;
        if (changes.events.length) await publish(changes.events);
      }
      return outcome;
    };

    /** A tool call the turn was stopped before making. */
    const notRun = (call: ToolCall) => ({
      ok: false,
      content: `${call.function.name} was not run: the user stopped the turn`,
    });

    const refuseUnknown = async (call: ToolCall, at: number) => {
      const content = `There is no tool named ${call.function.name} available to this agent`;
      await publishEvents({
        turnId: input.turnId,
        events: [
          {
            seq: at,
            event: {
              type: 'tool-start',
              callId: call.id,
              name: call.function.name,
              arguments: call.function.arguments,
            },
          },
          {
            seq: at + 1,
            event: { type: 'tool-result', callId: call.id, name: call.function.name, ok: false, content },
          },
        ],
      });
      return { ok: false, content };
    };

    for (;;) {
      // One answer: model rounds with tools until the model answers in text.
      for (let round = 0; ; round++) {
        const withTools = round < input.maxToolRounds && offered.length > 0;
        const message = await callModel(withTools);
        // A stopped turn runs none of the tool calls its last answer asked for (the call drops them).
        const halted = stopped();
        const calls = withTools && !halted ? message.toolCalls : [];
        if (!(halted && !message.content && calls.length === 0)) {
          messages.push({
            role: 'assistant',
            content: message.content,
            ...(calls.length ? { tool_calls: calls } : {}),
          });
          added.push({
            role: 'assistant',
            content: message.content,
            toolCalls: calls,
            ...(input.agent ? { agentId: input.agent.id } : {}),
          });
        }
        if (calls.length === 0) {
          response = message.content ?? '';
          break;
        }
        for (const call of calls) {
          // Stopped meanwhile: the remaining calls are answered as not run, so the stored history stays whole (every
          // tool call of an assistant message has its result) for the conversation's next turn.
          const outcome = stopped() ? notRun(call) : await runCall(call);
          toolCalls.push({ name: call.function.name, ok: outcome.ok });
          messages.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
          added.push({ role: 'tool', content: outcome.content, toolCallId: call.id, toolName: call.function.name });
        }
        if (stopped()) {
          response = message.content ?? '';
          break;
        }
      }
      if (!input.loop) break;
      // The iteration is stored by a regular activity: the workflow task ends there, so the iteration's work is
      // committed and a cancellation sent meanwhile is seen before the decision.
      await storeIteration({ ...target, messages: added, firstSeq: stored + 1 });
      stored += added.length;
      added = [];
      const marker = loopMarker(response);
      const budget = input.loop.budgetCredits;
      stop =
        marker === 'done'
          ? 'done'
          : marker === 'none'
            ? 'no_marker'
            : cancelled
              ? 'cancelled'
              : iteration >= input.loop.maxIterations
                ? 'max_iterations'
                : budget !== null && credits >= budget
                  ? 'budget'
                  : undefined;
      await publish([{ type: 'iteration', iteration, marker, ...(stop ? { stop } : {}) }]);
      if (stop) break;
      // Between iterations a loop takes its turn in the capacity queue (docs/capacity-queue.md): it gives back the slot
      // its last iteration held and waits for one again, behind its account's other unattended jobs (past its plan's
      // concurrency) and out of a saturated model's back-off, durably; a stop while it waits ends the loop there.
      if (patched('capacity-queue-loop')) {
        if (holdingSlot) await releaseCapacity({ holder: input.turnId });
        const slot = {
          holder: input.turnId,
          userId: input.userId,
          model: input.requestedModel,
          kind: 'agent-loop',
          priority: 'normal' as const,
        };
        holdingSlot = !!(await waitForCapacity(slot, { stop: () => cancelled !== null }));
        if (!holdingSlot) {
          stop = 'cancelled';
          await publish([{ type: 'iteration', iteration, marker, stop }]);
          break;
        }
      }
      // The next iteration: the agent is asked to go on.
      messages.push({ role: 'user', content: loopContinuePrompt });
      added.push({ role: 'user', content: loopContinuePrompt });
      iteration++;
      if ((iteration - 1) % input.loop.iterationsPerRun === 0) {
        // The next run reads the history from the store: everything this one added is there first.
        await storeMessages({ ...target, messages: added, firstSeq: stored + 1 });
        stored += added.length;
        added = [];
        const next: LoopCarry = {
          iteration,
          seq,
          nextAttempt,
          credits,
          costUsd,
          usage,
          model,
          storedMessages: stored,
          plan,
          memories,
          ...(cancelled ? { cancelledBy: (cancelled as { by: string }).by } : {}),
        };
        await continueAsNew<typeof chatTurn>({ ...input, loop: { ...input.loop, carry: next } });
      }
    }
    if (holdingSlot) await releaseCapacity({ holder: input.turnId });
    const final: ChatTurnEvent = turnDoneEvent(
      { turnId: input.turnId, sessionKey: input.sessionKey, agent: !!input.agent },
      { model, usage, credits, costUsd },
      response,
      input.loop
        ? { iterations: iteration, ...(stop ? { stop } : {}) }
        : stoppedByUser
          ? { stop: 'cancelled' as const }
          : {},
    );
    // (A turn its last call closed has its messages, status and last event stored: that call's answer was whole.)
    if (!closedByCall) {
      await finishTurn({
        ...target,
        status: 'done',
        messages: added,
        seq,
        final,
        firstSeq: stored + 1,
        ...(unjournaled.length ? { unjournaled } : {}),
      });
    }
    return { turnId: input.turnId, response, model, usage, credits, toolCalls: toolCalls.length };
  } catch (error) {
    // A loop continuing as new is not a failure: the next run carries on.
    if (error instanceof ContinueAsNew) throw error;
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const failure = cause instanceof ApplicationFailure ? cause : undefined;
    // A stream cut after content used positions past `seq`: the final event goes after them.
    const details = failure?.details?.[0] as CompletionFailureDetails | undefined;
    if (details?.nextSeq !== undefined) seq = Math.max(seq, details.nextSeq);
    const login = (failure?.details?.[0] as { login?: { agent: string; workspace: string } } | undefined)?.login;
    const final: ChatTurnEvent = {
      type: 'turn-error',
      errorType: failure?.type ?? 'internal_error',
      message: failure?.message ?? (error instanceof Error ? error.message : String(error)),
      ...(login ? { login } : {}),
    };
    await finishTurn({
      ...target,
      status: 'failed',
      messages: added,
      seq,
      final,
      firstSeq: stored + 1,
      ...(unjournaled.length ? { unjournaled } : {}),
    });
    // A turn that ended before its first model call (its message could not be stored, say) leaves the hold the API
    // took for that call: lift it now rather than at the stale-hold sweep. After a call the hold is the call's own,
    // settled or released by it, and this finds nothing to release. (Patched: histories of turns that failed
    // before this step existed replay without it.)
    if (input.metered && patched('turn-failure-releases-first-hold')) {
      await releaseUnusedHold({ userId: input.userId, workflowId: input.turnId, attempt: nextAttempt });
    }
    throw error;
  }
}

/**
 * The routing step: a local activity in the process that runs the turn, or, where that process does not serve the
 * agent service (a background worker), the agent service's activity on its own task queue.
 */
async function routeStep(request: RouteMessageInput): Promise<RouteMessageResult> {
  try {
    return await routeMessage(request);
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    // 'RouteElsewhere' (activities/chat-activities.ts; not imported: the workflow bundle takes no activity code).
    if (!(cause instanceof ApplicationFailure) || cause.type !== 'RouteElsewhere') throw error;
    const { routeMessage: remote } = proxyActivities<RoutingActivities>({
      taskQueue: request.routing.taskQueue,
      startToCloseTimeout: '5 minutes',
      retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
    });
    // There the step neither reads the history nor starts the agent's call: the turn's process does both.
    const { turn: _turn, ...elsewhere } = request;
    return remote(elsewhere);
  }
}

/**
 * What an `update_plan` call changed: the first plan is `created`, each step whose status or title changed (or that
 * is new) a `step`, and a plan whose steps are all completed `done`.
 */
function planChanges(previous: PlanStep[], rawArguments: string): { steps: PlanStep[]; events: ChatTurnEvent[] } {
  let steps: PlanStep[];
  try {
    steps = (JSON.parse(rawArguments) as { steps: PlanStep[] }).steps;
  } catch {
    return { steps: previous, events: [] };
  }
  if (!Array.isArray(steps)) return { steps: previous, events: [] };
  const events: ChatTurnEvent[] = [];
  if (previous.length === 0) events.push({ type: 'plan', change: 'created', steps });
  else {
    steps.forEach((step, index) => {
      const before = previous[index];
      if (!before || before.status !== step.status || before.title !== step.title) {
        events.push({ type: 'plan', change: 'step', steps, step: { ...step, index } });
      }
    });
  }
  const wasDone = previous.length > 0 && previous.every((step) => step.status === 'completed');
  if (steps.length > 0 && steps.every((step) => step.status === 'completed') && !wasDone) {
    events.push({ type: 'plan', change: 'done', steps });
  }
  return { steps, events };
}
