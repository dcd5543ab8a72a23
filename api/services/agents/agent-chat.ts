/**
 * The agent service's chat (spec 4.1, 6): routes a message to an agent, then runs it as the conversation's next turn
 * of the one chat-turn workflow (api/services/chat/service.ts, workflows/chat-turn.workflow.ts) with that agent's
 * system prompt, model, tools and the caller's relevant memories, or as an agent loop. Approvals and loop
 * cancellation reach the running workflow as Temporal updates.
 *
 * One workflow per message: a message for several candidate agents is routed inside its turn, by the turn's first
 * step (`route`, the `routeMessage` activity: the classifier call is the turn's attempt 1, metered and traced there).
 * The answer still starts with `routed`, or with the HTTP refusal routing ended in (no Google login, a model outside
 * the plan, credits short): `start` waits for the turn's first event before it answers. A named agent, or a single
 * preferred one, needs no routing: the turn starts with its agent.
 */
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { toolByName } from '../../../activities/tools/index.ts';
import type { WorkspaceName } from '../../../common/agents.ts';
import { resolveModel, type Catalogue } from '../../../common/catalogue.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { turnOfApproval } from '../../../common/agent-turn.ts';
import {
  openingEvents,
  turnStartEvent,
  type ChatTurnEvent,
  type ChatTurnInput,
  type LoadedMemory,
  type OfferedTool,
  type RouteMessageInput,
  type RouteMessageResult,
  type RoutedAgent,
  type RoutingRecord,
  type TurnSetup,
} from '../../../common/chat-turn.ts';
import type { SequencedStreamEvent } from '../../../common/completion.ts';
import { creditsFor } from '../../../common/credits.ts';
import type { ConversationStore, SessionRef } from '../../../activities/conversations/conversation-store.ts';
import type { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import { worstCaseCredits } from '../../../activities/credits/tokens.ts';
import type { Router } from '../../../activities/routing/router.ts';
import type { StreamHub } from '../../../activities/streaming/stream-hub.ts';
import type { TurnStops } from '../../../activities/streaming/turn-stops.ts';
import type { StreamJournal } from '../../../activities/streaming/stream-journal.ts';
import { transaction, type Pool, type Queryable } from '../../../db/pool.ts';
import { readTurnContext, type TurnContextStores } from '../../../activities/conversations/history.ts';
import type { ProviderCalls } from '../../../activities/provider-calls.ts';
import { openingCall } from '../../../workflows/turn-call.ts';
import type { ErrorType } from '../../../common/errors.ts';
import { errorStatus } from '../../../common/errors.ts';
import { cancelTurnUpdate, decideApprovalUpdate } from '../../../workflows/chat-turn.workflow.ts';
import { ApiError } from '../../errors.ts';
import type { Principal } from '../apikeys/service.ts';
import {
  offeredTool,
  ownerOf,
  shortOfCredits,
  type AgentTurnOptions,
  type ChatService,
  type StartedTurn,
} from '../chat/service.ts';
import { classifierRequest, type AgentRouter, type RoutableAgent } from './agent-router.ts';

/** An agent as a turn needs it (the caller's view: their model choice applied). */
export interface ChatAgent extends RoutableAgent {
  systemPrompt: string;
  model: string;
  tools: string[];
  /** A workspace agent (mail, calendar, …) needs the Google login, with that workspace's scope. */
  workspace?: WorkspaceName | null;
  temperature?: number | null;
}

/** Where the caller's agents come from (api/services/agents/service.ts). */
export interface AgentSource {
  list(principal: Principal): Promise<ChatAgent[]>;
}

export interface AgentChatSettings {
  maxIterations: number;
  approvalTimeoutMs: number;
  /** Loop iterations per workflow run before it continues as new. */
  iterationsPerRun: number;
  /** Memories loaded into a turn at most. */
  memoryLimit: number;
  /** Answers a message with images when the agent's model cannot see them. */
  visionModel: string;
}

export interface AgentMessage {
  sessionKey: string;
  /**
   * `schedule`: a scheduled task's run (api/services/schedules/); `webhook`, `github`, `slack`, `automation`: an
   * inbound webhook's run (api/services/webhooks/).
   */
  channel: 'web' | 'api' | 'schedule' | 'webhook' | 'github' | 'slack' | 'automation';
  /** The session the turn is in when it is not the owner's own `sessionKey` (a linked Slack channel's). */
  session?: SessionRef;
  /**
   * Tools offered beside the agent's own for this turn only, each with its approval rule (the github_comment tool of
   * a GitHub delivery, which needs approval unless the repository's owner allowed it).
   */
  extraTools?: Array<{ name: string; needsApproval: boolean }>;
  message: string;
  /** The turn of the session this message stands in for (its number): see TurnOpening.replaces. */
  replaces?: number;
  images?: string[];
  /**
   * The uploaded images among `images` (`image_file_ids`, or `image_file_id`), stored with the turn
   * (TurnOpening.imageFileIds): a turn standing in for this one attaches them again, and the history names them.
   */
  imageFileIds?: string[];
  preferredAgents?: string[];
  /** The agent named by the caller (the external API's `agent_id`): no routing. */
  agentId?: string;
  presetInstruction?: string;
  loop?: { maxIterations?: number; budgetCredits?: number | null };
}

export interface StartedAgentTurn extends StartedTurn {
  routed: RoutedAgent;
  /** The turn's events from its first (`routed`) on: what the response relays. */
  events: AsyncGenerator<SequencedStreamEvent>;
}

/** A prepared turn: its agent when it is known before the turn starts, null when the turn routes the message itself. */
export interface PreparedAgentTurn {
  input: ChatTurnInput;
  routed: RoutedAgent | null;
  agent: ChatAgent | null;
}

export class AgentChat {
  private readonly dependencies: {
    client: Client;
    chat: ChatService;
    router: AgentRouter;
    /** The completions router: plans the classifier's model for the caller. */
    planner: Pick<Router, 'plan'>;
    agents: AgentSource;
    toolSettings: ToolSettings;
    settings: AgentChatSettings;
    catalogue: Catalogue;
    /** What the routing step writes with, in one transaction (the hot-path pool). */
    pool: Pool;
    ledger: CreditLedger;
    journal: StreamJournal;
    hub: StreamHub;
    /** Stop, told to the step a turn is in, wherever it runs (activities/streaming/turn-stops.ts). */
    stops: TurnStops;
    conversations: ConversationStore;
    /** The memories a turn loads, read by the routing step with the history (RouteMessageInput.turn). */
    memories?: TurnContextStores['memories'];
    /** Where the routing step starts the routed agent's first call. */
    calls: ProviderCalls;
    /** The agent service's task queue: the routing step runs there when the turn's worker cannot (see `route`). */
    agentsTaskQueue: string;
    /** Whether the user's Google login is connected and granted the workspace's scope (absent: never). */
    workspaceConnected?: (userId: string, workspace: WorkspaceName) => Promise<boolean>;
  };

  constructor(dependencies: AgentChat['dependencies']) {
    this.dependencies = dependencies;
  }

  /**
   * Prepares the message's turn (or loop), starts it, and waits for its first event when the turn routes the message
   * itself. Refusals are ApiErrors (a routed agent's refusal too, though its turn ran: it ended failed at its first
   * step).
   */
  async start(principal: Principal, request: AgentMessage): Promise<StartedAgentTurn> {
    const { input, routed, agent } = await this.prepare(principal, request);
    const kind = input.loop ? 'Agent loop' : 'Agent turn';
    const classifier = input.routing?.classifier;
    const speculated = classifier ? this.classifierCall(input, classifier) : null;
    if (speculated) this.dependencies.router.speculate(input.message, input.routing!.candidates, speculated);
    const launched = this.dependencies.chat.launch(input, {
      kind: input.loop ? 'agent-loop' : 'agent-turn',
      memo: {
        session: request.sessionKey,
        channel: request.channel,
        ...(agent && routed ? { agent: agent.id, confidence: routed.confidence } : { routing: 'in-turn' }),
      },
      summary:
        agent && routed
          ? `${kind} ${input.turn} of session ${request.sessionKey}: ${agent.name} (routed by ${routed.method}, confidence ${routed.confidence}), for ${principal.userId}`
          : `${kind} ${input.turn} of session ${request.sessionKey}, routed by its first step among ${input.routing?.candidates.length ?? 0} agents, for ${principal.userId}`,
    });
    const started = await launched.catch((error: unknown) => {
      if (speculated) this.dependencies.router.discard(input.turnId, 1);
      throw error;
    });
    // The turn runs elsewhere (eager start declined): its routing step calls the classifier there.
    if (speculated && !started.local) this.dependencies.router.discard(input.turnId, 1);
    const events = this.dependencies.chat.events(started);
    if (routed) return { ...started, routed, events };
    const first = await events.next();
    const event = first.done ? null : (first.value.event as ChatTurnEvent);
    if (event?.type === 'turn-start' && event.agent) {
      return { ...started, routed: event.agent, events: startingWith(first.value!, events) };
    }
    if (event?.type === 'turn-error') throw refusalOf(event);
    throw new ApiError('internal_error', `The turn ${started.turnId} did not route its message`);
  }

  /** The classifier's call of a turn that routes its message: the turn's attempt 1. */
  private classifierCall(
    input: ChatTurnInput,
    classifier: NonNullable<NonNullable<ChatTurnInput['routing']>['classifier']>,
  ) {
    return { requestId: input.turnId, attempt: 1, userId: input.userId, candidates: classifier.candidates };
  }

  /**
   * Prepares the message's turn (session opened, turn numbered, credits held): the turn's workflow input, for `start`
   * or for a workflow that runs the turn as its child (a scheduled run). A message for one agent (named, or the one
   * preferred) gets that agent's turn; a message for several gets a turn that routes it (`routed` and `agent` null).
   * Refusals are ApiErrors.
   */
  async prepare(principal: Principal, request: AgentMessage): Promise<PreparedAgentTurn> {
    const { chat, agents, settings } = this.dependencies;
    const all = await agents.list(principal);
    let candidates = all;
    let routed: RoutedAgent;
    let agent: ChatAgent;
    if (request.agentId !== undefined) {
      const named = all.find((candidate) => candidate.id === request.agentId);
      if (!named) throw new ApiError('not_found', `No agent ${request.agentId}`, { param: 'agent_id' });
      agent = named;
      routed = { id: agent.id, name: agent.name, confidence: 1, method: 'named' };
    } else {
      if (request.preferredAgents?.length) {
        const unknown = request.preferredAgents.filter((id) => !all.some((candidate) => candidate.id === id));
        if (unknown.length) {
          throw new ApiError('invalid_request', `Unknown agents in preferred_agents: ${unknown.join(', ')}`, {
            param: 'preferred_agents',
          });
        }
        candidates = all.filter((candidate) => request.preferredAgents!.includes(candidate.id));
      }
      if (candidates.length !== 1)
        return { input: await this.prepareRouted(principal, request, candidates), routed: null, agent: null };
      agent = candidates[0]!;
      routed = { id: agent.id, name: agent.name, confidence: 1, method: 'preferred' };
    }
    if (agent.workspace && !(await this.dependencies.workspaceConnected?.(principal.userId, agent.workspace))) {
      throw new WorkspaceLoginRequired(agent);
    }
    const { model, agentTurn } = this.agentTurnOf(agent, routed, {
      hasImages: !!request.images?.length,
      ...(request.presetInstruction ? { presetInstruction: request.presetInstruction } : {}),
      ...(request.extraTools ? { extraTools: request.extraTools } : {}),
    });
    const input = await chat.prepare(
      { principal },
      {
        message: request.message,
        session_id: request.sessionKey,
        channel: request.channel,
        model,
        ...(request.replaces ? { replaces: request.replaces } : {}),
        ...(request.imageFileIds?.length ? { imageFileIds: request.imageFileIds } : {}),
      },
      true,
      request.session,
      { ...agentTurn, ...this.turnExtras(principal, request, settings) },
    );
    return { input, routed, agent };
  }

  /**
   * A turn that routes its message: the candidates as the classifier reads them, the classifier's model planned for
   * the caller (its worst case held as the turn's attempt 1), and what the routing step needs to prepare the agent.
   */
  private async prepareRouted(
    principal: Principal,
    request: AgentMessage,
    candidates: ChatAgent[],
  ): Promise<ChatTurnInput> {
    const { chat, router, planner, agentsTaskQueue, settings } = this.dependencies;
    const readable = candidates.map(({ id, name, description, keywords }) => ({ id, name, description, keywords }));
    const classify = classifierRequest(router.model, request.message, readable);
    const plan = await planner.plan(
      classify,
      principal.operator ? null : { plan: principal.plan, customModels: principal.customLimits?.models },
    );
    const classifier = plan.kind === 'planned' && plan.candidates.length ? plan.candidates : null;
    const first = classifier?.[0];
    const hold =
      first && !principal.operator && first.creditRate !== undefined
        ? { amount: worstCaseCredits(classify, first.creditRate), model: first.model }
        : null;
    return chat.prepareRouted(
      { principal },
      {
        message: request.message,
        session_id: request.sessionKey,
        channel: request.channel,
        ...(request.replaces ? { replaces: request.replaces } : {}),
        ...(request.imageFileIds?.length ? { imageFileIds: request.imageFileIds } : {}),
      },
      {
        candidates: readable,
        classifier: classifier ? { model: router.model, candidates: classifier } : null,
        taskQueue: agentsTaskQueue,
        request: {
          ...(request.images?.length ? { hasImages: true } : {}),
          ...(request.presetInstruction ? { presetInstruction: request.presetInstruction } : {}),
          ...(request.extraTools?.length ? { extraTools: request.extraTools } : {}),
        },
        principal: {
          userId: principal.userId,
          keyId: principal.keyId,
          operator: principal.operator,
          plan: principal.plan,
          customLimits: principal.customLimits,
        },
      },
      hold,
      this.turnExtras(principal, request, settings),
      request.session,
    );
  }

  /**
   * The routing step of a turn that routes its message (the turn's `routeMessage` activity, in the process that runs
   * the turn when it serves the agent service, else on the agent service's task queue): the classifier's call as the
   * turn's attempt 1 (AgentRouter), the routed agent's part of the turn (its prompt, tools, model plan and history
   * budget, as a named agent's turn gets them), then one transaction: the classifier's settlement (or its hold lifted
   * when no model answered), the routed agent's first hold, the agent on the turn's row, and `routed` in the journal.
   * A refusal (no Google login, a model outside the plan, credits short) comes back for the turn to end with. Run
   * again (a worker died after its transaction), the step finds `routed` in the journal and keeps that decision.
   */
  async route(input: RouteMessageInput, signal: AbortSignal): Promise<RouteMessageResult> {
    const { routing } = input;
    const { journal, hub, ledger, conversations, pool, router } = this.dependencies;
    const principal: Principal = routing.principal;
    const firstAttempt = routing.classifier ? 2 : 1;
    const recorded = (await journal.at(input.turnId, 0))?.event as ChatTurnEvent | undefined;
    const known = recorded?.type === 'turn-start' && recorded.agent ? recorded : null;
    let routed: RoutedAgent;
    let record: RoutingRecord;
    let settle: (() => Parameters<CreditLedger['settle']>[0]) | null = null;
    if (known) {
      routed = known.agent!;
      record = known.routing ?? { scores: {}, call: null };
    } else {
      const classifier = routing.classifier;
      const result = await router.route(
        input.message,
        routing.candidates,
        classifier
          ? { requestId: input.turnId, attempt: 1, userId: input.userId, candidates: classifier.candidates }
          : null,
        signal,
      );
      const { decision, call } = result;
      routed = {
        id: decision.agent.id,
        name: decision.agent.name,
        confidence: decision.confidence,
        method: decision.method,
      };
      const rate = call?.candidate.creditRate;
      const credits = call && input.metered && rate !== undefined ? creditsFor(call.usage.total_tokens, rate) : 0;
      record = {
        scores: decision.scores,
        call: call
          ? {
              model: call.candidate.model,
              provider: call.candidate.provider,
              usage: call.usage,
              credits,
              costUsd:
                (call.usage.prompt_tokens * call.candidate.price.input_per_1m +
                  call.usage.completion_tokens * call.candidate.price.output_per_1m) /
                1_000_000,
              latencyMs: call.latencyMs,
            }
          : null,
        ...(result.fallback ? { fallback: result.fallback } : {}),
      };
      if (call && rate !== undefined) {
        settle = () => ({
          userId: input.userId,
          workflowId: input.turnId,
          attempt: 1,
          amount: credits,
          model: call.candidate.model,
          promptTokens: call.usage.prompt_tokens,
          completionTokens: call.usage.completion_tokens,
          estimated: call.usageEstimated,
        });
      }
    }
    let prepared: { setup: TurnSetup; hold: { amount: number; model: string } | null } | null = null;
    let refusal: Extract<RouteMessageResult, { refusal: unknown }>['refusal'] | null = null;
    try {
      prepared = await this.setupOf(principal, input.message, routed, routing.request);
    } catch (error) {
      if (error instanceof WorkspaceLoginRequired && error.agent.workspace) {
        refusal = {
          errorType: error.type,
          message: error.message,
          login: { agent: error.agent.name, workspace: error.agent.workspace },
        };
      } else if (error instanceof ApiError) {
        refusal = { errorType: error.type, message: error.message };
      } else throw error;
    }
    // The turn's process runs this step and the conversation's previous turn has ended: the step reads what the turn's
    // first step would (the history, the memories), and starts the agent's first call once its hold is committed.
    const opening = prepared && input.turn && routing.previousEnded ? input.turn : null;
    if (known) {
      // The transaction below committed in the step's earlier run: nothing to write again (the memories it found are
      // in the journal).
      if (!prepared) return { routed, routing: record, firstAttempt, refusal: refusal! };
      if (opening) {
        const found = (await journal.at(input.turnId, 1))?.event as ChatTurnEvent | undefined;
        const memories = found?.type === 'memories-loaded' ? found.memories : undefined;
        prepared.setup = { ...prepared.setup, ...(await this.openingOf(opening, prepared.setup, pool, memories)) };
        this.speculate(opening, prepared.setup, firstAttempt);
      }
      return { routed, routing: record, firstAttempt, setup: prepared.setup };
    }
    const start = prepared
      ? turnStartEvent({
          turnId: input.turnId,
          sessionKey: input.sessionKey,
          model: prepared.setup.requestedModel,
          agent: routed,
          routing: record,
        })
      : null;
    let events: SequencedStreamEvent[] = [];
    await transaction(pool, async (client) => {
      if (routing.classifier && input.metered) {
        if (settle) await ledger.settle(settle(), client);
        else await ledger.release({ userId: input.userId, workflowId: input.turnId, attempt: 1 }, client);
      }
      const hold = prepared?.hold;
      if (hold && input.metered) {
        const held = await ledger.reserve(
          { userId: input.userId, workflowId: input.turnId, attempt: firstAttempt, ...hold },
          client,
        );
        if (!held.ok) {
          const error = shortOfCredits(hold, held.available);
          refusal = { errorType: error.type, message: error.message };
          prepared = null;
          return;
        }
      }
      if (prepared && start) {
        await conversations.setTurnAgent(input.turnId, routed.id, client);
        if (opening) prepared.setup = { ...prepared.setup, ...(await this.openingOf(opening, prepared.setup, client)) };
        events = openingEvents(start, prepared.setup.openingMemories);
        await journal.write(client, input.turnId, events);
      }
    });
    if (prepared && start) {
      for (const event of events) hub.publish(input.turnId, event);
      if (opening) this.speculate(opening, prepared.setup, firstAttempt);
    }
    return prepared
      ? { routed, routing: record, firstAttempt, setup: prepared.setup }
      : { routed, routing: record, firstAttempt, refusal: refusal! };
  }

  /**
   * What a turn's first step would read, read by its routing step (on `executor`, its transaction's client): the
   * history within the routed agent's budget and the memories (`found`: those an earlier run of the step journalled).
   */
  private async openingOf(
    turn: ChatTurnInput,
    setup: TurnSetup,
    executor: Queryable,
    found?: LoadedMemory[],
  ): Promise<Pick<TurnSetup, 'history' | 'openingMemories'>> {
    const { conversations, memories } = this.dependencies;
    const context = await readTurnContext(
      { conversations, ...(memories && !found ? { memories } : {}) },
      turn,
      setup.historyBudgetTokens,
      executor,
    );
    const loaded = found ?? context.memories;
    return { history: context.history, ...(loaded ? { openingMemories: loaded } : {}) };
  }

  /**
   * Starts the routed agent's first model call, as the turn will make it once routed (the workflow merges the setup
   * into its input the same way), for the turn's next local activity to adopt instead of calling again.
   */
  private speculate(turn: ChatTurnInput, setup: TurnSetup, firstAttempt: number): void {
    const { routing: _routing, ...rest } = turn;
    const routedTurn: ChatTurnInput = { ...rest, ...setup };
    if (!routedTurn.history) return;
    const call = openingCall({ ...routedTurn, history: routedTurn.history }, firstAttempt);
    if (call) void this.dependencies.calls.startSpeculative(call).catch(() => undefined);
  }

  /** The routed agent's part of a turn routed inside it, and its first call's hold. Refusals are ApiErrors. */
  private async setupOf(
    principal: Principal,
    message: string,
    routed: RoutedAgent,
    request: RouteMessageInput['routing']['request'],
  ): Promise<{ setup: TurnSetup; hold: { amount: number; model: string } | null }> {
    const agent = (await this.dependencies.agents.list(principal)).find((candidate) => candidate.id === routed.id);
    if (!agent) throw new ApiError('not_found', `The agent ${routed.name} no longer exists`);
    if (agent.workspace && !(await this.dependencies.workspaceConnected?.(principal.userId, agent.workspace))) {
      throw new WorkspaceLoginRequired(agent);
    }
    const { model, agentTurn } = this.agentTurnOf(agent, routed, request);
    const plan = await this.dependencies.chat.planTurn({ principal }, { message, model }, agentTurn);
    return {
      setup: {
        requestedModel: plan.requestedModel,
        candidates: plan.candidates,
        tools: plan.tools,
        historyBudgetTokens: plan.historyBudgetTokens,
        agent: agentTurn.agent,
      },
      hold: plan.hold,
    };
  }

  /** An agent's part of a turn: its prompt (with the preset instruction), its tools, and the model it answers on. */
  private agentTurnOf(
    agent: ChatAgent,
    routed: RoutedAgent,
    request: RouteMessageInput['routing']['request'],
  ): { model: string; agentTurn: Pick<AgentTurnOptions, 'agent' | 'tools'> } {
    const tools: OfferedTool[] = agent.tools.flatMap((name) => {
      const tool = toolByName(name);
      return tool && tool.configured(this.dependencies.toolSettings) ? [offeredTool(tool)] : [];
    });
    for (const extra of request.extraTools ?? []) {
      const tool = toolByName(extra.name);
      if (!tool || tools.some((offered) => offered.name === extra.name)) continue;
      const { needsApproval: _rule, ...offered } = offeredTool(tool);
      tools.push({ ...offered, ...(extra.needsApproval ? { needsApproval: true } : {}) });
    }
    const systemPrompt = request.presetInstruction
      ? `${agent.systemPrompt}\n\n${request.presetInstruction}`
      : agent.systemPrompt;
    const canSee = resolveModel(this.dependencies.catalogue, agent.model)?.model.capabilities.includes('vision');
    const model = request.hasImages && !canSee ? this.dependencies.settings.visionModel : agent.model;
    return {
      model,
      agentTurn: {
        agent: {
          ...routed,
          systemPrompt,
          ...(agent.temperature !== null && agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
        },
        tools,
      },
    };
  }

  /** What an agent's turn carries whichever agent answers: memories, the approval deadline, images, a loop's bounds. */
  private turnExtras(
    principal: Principal,
    request: AgentMessage,
    settings: AgentChatSettings,
  ): Omit<AgentTurnOptions, 'agent' | 'tools'> {
    const loop: ChatTurnInput['loop'] = request.loop
      ? {
          maxIterations: Math.min(request.loop.maxIterations ?? settings.maxIterations, settings.maxIterations),
          budgetCredits: request.loop.budgetCredits ?? null,
          iterationsPerRun: settings.iterationsPerRun,
        }
      : undefined;
    return {
      memories: { userId: principal.userId, limit: settings.memoryLimit },
      approvalTimeoutMs: settings.approvalTimeoutMs,
      ...(request.images?.length ? { images: request.images } : {}),
      ...(loop ? { loop } : {}),
    };
  }

  /** Delivers a decision on a waiting tool call (`POST /chat/approvals/{id}/approve|reject`). */
  async decide(principal: Principal, approvalId: string, approve: boolean, reason?: string): Promise<void> {
    const turnId = turnOfApproval(approvalId);
    if (!turnId || !(await this.dependencies.chat.ownsTurn({ principal }, turnId))) {
      throw new ApiError('not_found', `No approval ${approvalId}`);
    }
    const handle = this.dependencies.client.workflow.getHandle(turnId);
    try {
      await handle.executeUpdate(decideApprovalUpdate, {
        args: [{ approvalId, approve, by: ownerOf({ principal }), ...(reason ? { reason } : {}) }],
      });
    } catch (error) {
      throw updateRefusal(error, `approval ${approvalId}`);
    }
  }

  /**
   * Stops a turn (`cancelTurn`): a loop after its current iteration, any other turn now. The step a turn is in is told
   * first, directly (an update waits for the workflow task it runs in to end); the update then records the stop in the
   * turn's history, where the workflow acts on it. A turn that ended meanwhile because of this stop counts as stopped;
   * one that had already finished is a 409.
   */
  async cancel(principal: Principal, turnId: string): Promise<void> {
    if (!(await this.dependencies.chat.ownsTurn({ principal }, turnId))) {
      throw new ApiError('not_found', `No chat turn ${turnId}`);
    }
    const { stops, client, journal } = this.dependencies;
    const running = await this.dependencies.conversations.turnStatus(turnId);
    if (running?.status !== 'running') throw new ApiError('conflict', `The turn ${turnId} has finished`);
    await stops.stop(turnId);
    try {
      await client.workflow
        .getHandle(turnId)
        .executeUpdate(cancelTurnUpdate, { args: [{ by: ownerOf({ principal }) }] });
    } catch (error) {
      const refusal = updateRefusal(error, `turn ${turnId}`);
      if (refusal.type === 'conflict' && (await endedStopped(journal, turnId))) return;
      throw refusal;
    }
  }
}

/**
 * A workspace agent was chosen for a user without the Google login, or whose login did not grant that workspace's
 * scope, or whose login Google revoked: they are sent to `/auth/google`.
 */
export class WorkspaceLoginRequired extends ApiError {
  readonly agent: ChatAgent;
  constructor(agent: ChatAgent) {
    super(
      'permission_denied',
      `The ${agent.name} agent works with your Google ${agent.workspace}: log in with Google (GET /auth/google) and allow access to it`,
    );
    this.agent = agent;
  }
}

/** The refusal a turn routed inside its workflow ended with, as the API's error (a Google login: the 302). */
function refusalOf(event: Extract<ChatTurnEvent, { type: 'turn-error' }>): ApiError {
  if (event.login) {
    return new WorkspaceLoginRequired({
      id: '',
      name: event.login.agent,
      description: '',
      keywords: [],
      systemPrompt: '',
      model: '',
      tools: [],
      workspace: event.login.workspace as WorkspaceName,
    });
  }
  const type = (event.errorType in errorStatus ? event.errorType : 'internal_error') as ErrorType;
  return new ApiError(type, event.message);
}

/** `first`, then the rest of `events`. */
async function* startingWith(
  first: SequencedStreamEvent,
  events: AsyncGenerator<SequencedStreamEvent>,
): AsyncGenerator<SequencedStreamEvent> {
  yield first;
  yield* events;
}

/** Why a turn refused an update (its validator's failure), as the API's error. */
/** Whether the turn ended stopped by its owner: its last event is `turn-done` with `stop: 'cancelled'`. */
async function endedStopped(journal: StreamJournal, turnId: string): Promise<boolean> {
  const events = await journal.read(turnId);
  const last = events.at(-1)?.event as ChatTurnEvent | undefined;
  return last?.type === 'turn-done' && last.stop === 'cancelled';
}

function updateRefusal(error: unknown, what: string): ApiError {
  if (error instanceof WorkflowNotFoundError) return new ApiError('conflict', `The ${what} is no longer running`);
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : error;
  if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
    return new ApiError(cause.type as ErrorType, cause.message);
  }
  // A finished workflow cannot take updates: the approval is no longer waiting.
  if ((error as Error).message?.includes('completed')) {
    return new ApiError('conflict', `The ${what} is no longer running: its turn has finished`);
  }
  throw error;
}
