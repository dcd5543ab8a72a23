/**
 * The session chat (spec 4.4): accepts a message for a session, starts the conversation's next turn as a durable
 * workflow (`chatTurn`, eagerly, so it usually runs in this process), and relays the turn's events: from the
 * in-process hub when the turn runs here, else from the stream journal. Sessions belong to a user (`user:<id>`) or
 * to guests (`guest`): a guest session is reached by its key alone, and a keyed user never sees one.
 */
import type { Client } from '@temporalio/client';
import type { PoolClient } from 'pg';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { ChatCompletionRequest } from '../../../common/chat.ts';
import {
  openingEvents,
  turnStartEvent,
  type ChatRequest,
  type ChatTurnEvent,
  type ChatTurnInput,
  type OfferedTool,
  type TurnRouting,
} from '../../../common/chat-turn.ts';
import type { SequencedStreamEvent } from '../../../common/completion.ts';
import { kindKey, modelKey, userKey } from '../../../common/search-attributes.ts';
import { resolveModel } from '../../../common/catalogue.ts';
import type {
  ConversationStore,
  OpenedTurn,
  SessionRef,
} from '../../../activities/conversations/conversation-store.ts';
import { readTurnContext, type TurnContextStores } from '../../../activities/conversations/history.ts';
import type { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import { countPromptTokens, worstCaseCredits } from '../../../activities/credits/tokens.ts';
import type { Router } from '../../../activities/routing/router.ts';
import type { StreamHub, StreamSubscription } from '../../../activities/streaming/stream-hub.ts';
import type { StreamJournal } from '../../../activities/streaming/stream-journal.ts';
import { configuredTools } from '../../../activities/tools/index.ts';
import { toolJsonSchema } from '../../../activities/tools/runtime.ts';
import { deleteSandbox } from '../../../activities/tools/sandbox.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import type { LoadedCatalogue } from '../../../config/load-catalogue.ts';
import type { chatTurn } from '../../../workflows/chat-turn.workflow.ts';
import { openingCall } from '../../../workflows/turn-call.ts';
import type { ProviderCalls } from '../../../activities/provider-calls.ts';
import { ApiError, visionRefusal } from '../../errors.ts';
import type { StageMarks } from '../../server-timing.ts';
import type { Principal } from '../apikeys/service.ts';

export interface ChatServiceDependencies {
  client: Client;
  taskQueue: string;
  router: Router;
  catalogue: LoadedCatalogue;
  conversations: ConversationStore;
  ledger: CreditLedger;
  hub: StreamHub;
  journal: StreamJournal;
  toolSettings: ToolSettings;
  /** The model a message without one is answered by (a free-plan model: guests use it too). */
  defaultModel: string;
  maxToolRounds: number;
  /** Where a turn opened with its history starts its first model call, alongside the workflow's start. */
  calls: ProviderCalls;
  /** The memories an agent's turn loads, read in its opening when the history is (the agent service's). */
  memories?: TurnContextStores['memories'];
}

/**
 * Counts a message against its caller's rate limits inside the turn's opening transaction (RateLimits.consumeWithin);
 * throws to refuse it.
 */
export type Admit = (client: PoolClient) => Promise<void>;

/** Who is chatting: a keyed principal, or a guest. */
export type Chatter = { principal: Principal } | { guest: true };

export interface StartedTurn {
  turnId: string;
  sessionKey: string;
  /** The turn runs in this process: its events arrive on `subscription`. */
  local: boolean;
  subscription: StreamSubscription | null;
}

/** Room kept for the answer when the history is trimmed to the model's context window. */
const answerReserveTokens = 4_096;
const journalPollMs = 25;
/** Entries the per-process caches of agent tool offers and prompt token counts hold before they start over. */
const cachedEntries = 1_000;

export function ownerOf(chatter: Chatter): string {
  return 'principal' in chatter ? `user:${chatter.principal.userId}` : 'guest';
}

export class ChatService {
  private readonly dependencies: ChatServiceDependencies;

  private toolOffer: ToolOffer | undefined;
  private readonly agentOffers = new Map<string, ToolOffer>();
  private readonly promptTokens = new Map<string, number>();

  constructor(dependencies: ChatServiceDependencies) {
    this.dependencies = dependencies;
  }

  /**
   * The tools offered to the model (those the deployment has configured), as the turn's input carries them, with
   * their specs and the prompt tokens those take. The settings are fixed for the process, so this is built once
   * rather than converting every schema and counting its tokens on each message.
   */
  private offer(): ToolOffer {
    if (this.toolOffer) return this.toolOffer;
    const tools: Record<string, OfferedTool> = Object.fromEntries(
      configuredTools(this.dependencies.toolSettings).map((tool) => [tool.name, offeredTool(tool)]),
    );
    const specs = Object.values(tools).map(toToolSpec);
    const tokens = countPromptTokens([{ role: 'system', content: JSON.stringify(specs) }]);
    this.toolOffer = { tools, specs, tokens };
    return this.toolOffer;
  }

  /** An agent's tool offer, built once per set of tools (agents share a few sets; counting tokens costs ms). */
  private agentOffer(list: OfferedTool[]): ToolOffer {
    // A tool's approval rule may differ between turns (github_comment), so it is part of the set's name.
    const key = list.map((tool) => `${tool.name}${tool.needsApproval ? '!' : ''}`).join(',');
    let offer = this.agentOffers.get(key);
    if (!offer) {
      if (this.agentOffers.size >= cachedEntries) this.agentOffers.clear();
      offer = offerOf(list);
      this.agentOffers.set(key, offer);
    }
    return offer;
  }

  /** The prompt tokens of an agent's system prompt, counted once per prompt. */
  private systemTokens(options: Pick<AgentTurnOptions, 'agent'>): number {
    const prompt = options.agent.systemPrompt;
    let tokens = this.promptTokens.get(prompt);
    if (tokens === undefined) {
      if (this.promptTokens.size >= cachedEntries) this.promptTokens.clear();
      tokens = countPromptTokens([systemOf(options)]);
      this.promptTokens.set(prompt, tokens);
    }
    return tokens;
  }

  /**
   * Prepares the turn (`prepare`) and starts its workflow, eagerly, so it usually runs in this process. `admit` counts
   * the caller's rate limits inside the turn's opening transaction (throwing refuses the message).
   */
  async start(
    chatter: Chatter,
    body: ChatRequest,
    stream: boolean,
    admit?: Admit,
    timing?: StageMarks,
  ): Promise<StartedTurn> {
    const input = await this.prepare(chatter, body, stream, undefined, undefined, admit, timing);
    const started = await this.launch(input, {
      memo: { session: body.session_id, channel: body.channel, stream },
      summary: `Chat turn ${input.turn} of session ${body.session_id} (${body.channel}), for ${input.userId}`,
    });
    timing?.mark('start');
    return started;
  }

  /** Starts a prepared turn's workflow (abandoning the turn when it cannot start). */
  async launch(
    input: ChatTurnInput,
    described: { memo: Record<string, unknown>; summary: string; kind?: string },
  ): Promise<StartedTurn> {
    const { client, taskQueue, hub, calls } = this.dependencies;
    const subscription = hub.subscribe(input.turnId);
    // A turn opened with its history has no first step to hand the waiting response its first events (journalled),
    // and its first model call is known: it starts now rather than after the start round trip, and the workflow's
    // first local activity adopts it (workflows/turn-call.ts builds it for both), as a completion's attempt 1 is.
    const opening = input.history ? openingCall({ ...input, history: input.history }) : null;
    if (input.history) {
      for (const event of openingEventsOf(input)) hub.publish(input.turnId, event);
      if (opening) void calls.startSpeculative(opening).catch(() => undefined);
    }
    try {
      const handle = await client.workflow.start<typeof chatTurn>('chatTurn', {
        workflowId: input.turnId,
        taskQueue,
        args: [input],
        requestEagerStart: true,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        typedSearchAttributes: [
          { key: kindKey, value: described.kind ?? 'chat-turn' },
          { key: userKey, value: input.userId },
          { key: modelKey, value: input.requestedModel },
        ],
        memo: described.memo,
        staticSummary: described.summary,
      });
      const local = handle.eagerlyStarted;
      if (!local) {
        // The turn runs in another process, which makes its first call itself.
        subscription.close();
        if (opening) calls.discard(input.turnId, 1);
      }
      return { turnId: input.turnId, sessionKey: input.sessionKey, local, subscription: local ? subscription : null };
    } catch (error) {
      if (opening) calls.discard(input.turnId, 1);
      subscription.close();
      await this.abandon(input);
      throw error;
    }
  }

  /** Undoes a prepared turn whose workflow could not be started: the turn closes as failed, its hold is released. */
  async abandon(input: ChatTurnInput): Promise<void> {
    await this.dependencies.conversations.finishTurn(input.turnId, 'failed');
    if (input.metered) {
      await this.dependencies.ledger.release({ userId: input.userId, workflowId: input.turnId, attempt: 1 });
    }
  }

  /**
   * Plans the model for the chatter's plan, then opens the turn in one transaction (ConversationStore.openTurn): the
   * caller's rate limits (`admit`), the session (or `session`, a messaging app's), the conversation's next turn number,
   * the user's message, attempt 1's worst-case credit hold and the turn's start event in the journal. The turn's
   * workflow input, ready to start. Refusals (no such model, not in the plan, not enough credits, a rate limit) are
   * ApiErrors and leave nothing behind. `imageFileIds`: the uploaded images the message carries, stored with the
   * turn (TurnOpening.imageFileIds); the images themselves travel in `agentTurn.images`.
   */
  async prepare(
    chatter: Chatter,
    body: Omit<ChatRequest, 'channel'> & { channel: string; replaces?: number; imageFileIds?: string[] },
    stream: boolean,
    session?: SessionRef,
    agentTurn?: AgentTurnOptions,
    admit?: Admit,
    timing?: StageMarks,
  ): Promise<ChatTurnInput> {
    const { conversations, ledger, journal, memories } = this.dependencies;
    const plan = await this.planTurn(chatter, body, agentTurn);
    timing?.mark('plan');
    const { result: input } = await conversations.openTurn(
      {
        owner: ownerOf(chatter),
        key: body.session_id,
        channel: body.channel,
        ...(session ? { session } : {}),
        agentId: agentTurn?.agent.id ?? null,
        message: body.message,
        ...(body.replaces ? { replaces: body.replaces } : {}),
        ...(body.imageFileIds?.length ? { imageFileIds: body.imageFileIds } : {}),
      },
      {
        ...(admit ? { before: admit } : {}),
        after: async (client, opened) => {
          const { hold } = plan;
          if (hold) {
            const held = await ledger.reserve(
              { userId: plan.userId, workflowId: opened.turnId, attempt: 1, ...hold },
              client,
            );
            if (!held.ok) throw shortOfCredits(hold, held.available);
          }
          // The previous turn has ended (or there is none): its messages (and any memory it saved) are stored, so the
          // history and the memories relevant to the message are read here, in the opening's transaction, and the
          // turn's workflow starts with its model call, which the API starts alongside the workflow's start (`launch`).
          // Otherwise the turn's first step reads them, after waiting for the previous turn.
          const asked = agentTurn?.memories;
          const context =
            opened.previousEnded && (!asked || memories !== undefined)
              ? await readTurnContext(
                  { conversations, ...(memories ? { memories } : {}) },
                  { ...opened, message: body.message, ...(asked ? { memories: asked } : {}) },
                  plan.historyBudgetTokens,
                  client,
                )
              : null;
          const prepared: ChatTurnInput = {
            ...this.inputOf(chatter, body, stream, opened, plan, agentTurn),
            requestedModel: plan.requestedModel,
            candidates: plan.candidates,
            tools: plan.tools,
            historyBudgetTokens: plan.historyBudgetTokens,
            ...(agentTurn ? { agent: agentTurn.agent } : {}),
            ...(context ? { history: context.history } : {}),
            ...(context?.memories ? { openingMemories: context.memories } : {}),
          };
          await journal.write(client, prepared.turnId, openingEventsOf(prepared));
          return prepared;
        },
      },
    );
    timing?.mark('open');
    return input;
  }

  /**
   * Opens an agent service turn routed inside its workflow (`routing`, see AgentChat): the session, the turn's number,
   * the user's message and the classifier's hold (attempt 1) in one transaction, as `prepare` does; the routing step
   * then holds the routed agent's first call and journals `routed`. When the classifier's hold does not fit, the
   * keywords route (as a classifier refused for credits did). The agent's part of the input is the routing step's.
   */
  async prepareRouted(
    chatter: { principal: Principal },
    body: { message: string; session_id: string; channel: string; replaces?: number; imageFileIds?: string[] },
    routing: TurnRouting,
    classifierHold: { amount: number; model: string } | null,
    agentTurn: Omit<AgentTurnOptions, 'agent' | 'tools'>,
    session?: SessionRef,
  ): Promise<ChatTurnInput> {
    const { conversations, ledger } = this.dependencies;
    const metered = !chatter.principal.operator;
    const userId = chatter.principal.userId;
    const { result: input } = await conversations.openTurn(
      {
        owner: ownerOf(chatter),
        key: body.session_id,
        channel: body.channel,
        ...(session ? { session } : {}),
        agentId: null,
        message: body.message,
        ...(body.replaces ? { replaces: body.replaces } : {}),
        ...(body.imageFileIds?.length ? { imageFileIds: body.imageFileIds } : {}),
      },
      {
        after: async (client, opened) => {
          let classifier = routing.classifier;
          if (classifier && metered && classifierHold) {
            const held = await ledger.reserve(
              { userId, workflowId: opened.turnId, attempt: 1, ...classifierHold },
              client,
            );
            if (!held.ok) classifier = null;
          }
          const plan: TurnPlan = {
            userId,
            metered,
            requestedModel: 'auto',
            candidates: [],
            tools: {},
            historyBudgetTokens: 0,
            hold: null,
          };
          const prepared: ChatTurnInput = {
            ...this.inputOf(chatter, { ...body }, true, opened, plan, agentTurn),
            requestedModel: 'auto',
            candidates: [],
            tools: {},
            historyBudgetTokens: 0,
            routing: { ...routing, classifier, ...(opened.previousEnded ? { previousEnded: true } : {}) },
          };
          return prepared;
        },
      },
    );
    return input;
  }

  /**
   * What a turn's workflow needs that depends on its model: the model's planned candidates for the chatter's plan, the
   * tools offered (an agent's own, or the deployment's), the history's token budget, and the first call's worst-case
   * hold. Writes nothing. Refusals (no such model, not in the plan, no vision) are ApiErrors.
   */
  async planTurn(
    chatter: Chatter,
    body: { message: string; model?: string | undefined; reasoning_effort?: ChatRequest['reasoning_effort'] },
    agentTurn?: Pick<AgentTurnOptions, 'agent' | 'tools'>,
  ): Promise<TurnPlan> {
    const { router, catalogue } = this.dependencies;
    const principal = 'principal' in chatter ? chatter.principal : null;
    const requestedModel = body.model ?? this.dependencies.defaultModel;
    const { tools, specs, tokens: toolTokens } = agentTurn ? this.agentOffer(agentTurn.tools) : this.offer();
    const probe: ChatCompletionRequest = {
      model: requestedModel,
      messages: [{ role: 'user', content: body.message }],
      ...(specs.length ? { tools: specs } : {}),
    };
    const plan = await router.plan(
      probe,
      principal
        ? principal.operator
          ? null
          : { plan: principal.plan, customModels: principal.customLimits?.models }
        : { plan: 'free' },
    );
    if (plan.kind === 'model_not_found') {
      throw new ApiError('model_not_found', `The model '${requestedModel}' does not exist; see GET /v1/models`, {
        param: 'model',
      });
    }
    if (plan.kind === 'not_in_plan') {
      const who = principal ? `your ${principal.plan} plan` : 'guest access (free-plan models only)';
      throw new ApiError('permission_denied', `The model '${plan.model}' is not available to ${who}`, {
        param: 'model',
        requiredPlan: plan.requiredPlan ?? undefined,
      });
    }
    if (plan.kind === 'needs_vision') throw visionRefusal(plan.model);
    const { candidates } = plan;
    const metered = !!principal && !principal.operator;
    const first = candidates[0];
    const contextWindow = first
      ? (resolveModel(catalogue.catalogue, first.model)?.model.contextWindow ?? 32_768)
      : 32_768;
    return {
      userId: principal?.userId ?? 'guest',
      metered,
      requestedModel,
      candidates,
      tools,
      historyBudgetTokens: Math.max(
        1_024,
        contextWindow - answerReserveTokens - toolTokens - (agentTurn ? this.systemTokens(agentTurn) : 0),
      ),
      // Attempt 1's worst case: held in the turn's opening (or, routed inside the turn, by its routing step).
      hold:
        metered && first?.creditRate !== undefined
          ? { amount: worstCaseCredits(probe, first.creditRate), model: first.model }
          : null,
    };
  }

  /** The turn's input apart from its model's part (`TurnPlan`). */
  private inputOf(
    chatter: Chatter,
    body: { message: string; channel: string; reasoning_effort?: ChatRequest['reasoning_effort'] },
    stream: boolean,
    opened: OpenedTurn,
    plan: TurnPlan,
    agentTurn?: Omit<AgentTurnOptions, 'agent' | 'tools'>,
  ): Omit<ChatTurnInput, 'requestedModel' | 'candidates' | 'tools' | 'historyBudgetTokens'> {
    return {
      turnId: opened.turnId,
      conversationId: opened.conversationId,
      sessionId: opened.sessionId,
      sessionKey: opened.key,
      channel: body.channel,
      turn: opened.turn,
      previousTurnId: opened.previousTurnId,
      message: body.message,
      userId: plan.userId,
      metered: plan.metered,
      stream,
      ...(body.reasoning_effort === undefined ? {} : { reasoningEffort: body.reasoning_effort }),
      maxToolRounds: this.dependencies.maxToolRounds,
      created: Math.floor(Date.now() / 1000),
      ...(agentTurn
        ? {
            owner: ownerOf(chatter),
            approvalTimeoutMs: agentTurn.approvalTimeoutMs,
            ...(agentTurn.memories ? { memories: agentTurn.memories } : {}),
            ...(agentTurn.images?.length ? { images: agentTurn.images } : {}),
            ...(agentTurn.loop ? { loop: agentTurn.loop } : {}),
          }
        : {}),
      opened: true,
    };
  }

  /**
   * The turn's events in order, after `afterSeq`, until its last one (`turn-done` or `turn-error`): from the
   * subscription when the turn runs here, else from the journal (polled; also how a stream is resumed).
   */
  async *events(
    started: Pick<StartedTurn, 'turnId' | 'subscription'>,
    afterSeq = -1,
  ): AsyncGenerator<SequencedStreamEvent> {
    let lastSeq = afterSeq;
    if (started.subscription) {
      let handedOff = false;
      try {
        for await (const item of started.subscription) {
          // In-process signals of the model calls (seq -1) and repeats of a retried step are skipped.
          if (item.seq <= lastSeq) continue;
          lastSeq = item.seq;
          yield item;
          if (isFinal(item.event)) return;
          // A turn that waits for a person, or a loop that may continue as new, may go on in another worker
          // process: from here its events are read from the journal, which every process writes.
          const type = (item.event as ChatTurnEvent).type;
          if (type === 'approval-required' || type === 'iteration') {
            handedOff = true;
            break;
          }
        }
      } finally {
        started.subscription.close();
      }
      if (!handedOff) return;
    }
    const deadline = Date.now() + 60 * 60_000;
    while (Date.now() < deadline) {
      // While the database is out nothing is read; what the turn writes meanwhile is journalled once it is back.
      const items = await this.dependencies.journal.poll(started.turnId, lastSeq);
      for (const item of items ?? []) {
        lastSeq = item.seq;
        yield item;
        if (isFinal(item.event)) return;
      }
      await new Promise((resolve) => setTimeout(resolve, items ? journalPollMs : 1_000));
    }
  }

  /**
   * Deletes the chatter's session and the history that came through it (with its conversation's sandbox when the
   * conversation went too). `busy` while a turn of its conversation runs.
   */
  async deleteSession(chatter: Chatter, key: string): Promise<'deleted' | 'busy' | 'not_found'> {
    const deleted = await this.dependencies.conversations.deleteSession(ownerOf(chatter), key);
    if (deleted === null) return 'not_found';
    if (deleted === 'busy') return 'busy';
    if (deleted.conversationDeleted) await deleteSandbox(this.dependencies.toolSettings, deleted.conversationId);
    return 'deleted';
  }

  /** A turn's owner check for resuming its stream: the turn must belong to one of the chatter's sessions. */
  async ownsTurn(chatter: Chatter, turnId: string): Promise<boolean> {
    return (await this.dependencies.conversations.ownerOfTurn(turnId)) === ownerOf(chatter);
  }
}

function isFinal(
  event: SequencedStreamEvent['event'],
): event is Extract<ChatTurnEvent, { type: 'turn-done' | 'turn-error' }> {
  return event.type === 'turn-done' || event.type === 'turn-error';
}

/** What makes a turn an agent's (the agent service): the routed agent, its tools, memories, images, a loop. */
export interface AgentTurnOptions {
  agent: NonNullable<ChatTurnInput['agent']>;
  tools: OfferedTool[];
  memories?: { userId: string; limit: number };
  images?: string[];
  approvalTimeoutMs: number;
  loop?: NonNullable<ChatTurnInput['loop']>;
}

/** A turn's model part (`ChatService.planTurn`). */
export interface TurnPlan {
  userId: string;
  metered: boolean;
  requestedModel: string;
  candidates: ChatTurnInput['candidates'];
  tools: ChatTurnInput['tools'];
  historyBudgetTokens: number;
  /** The first call's worst case, when the turn is metered. */
  hold: { amount: number; model: string } | null;
}

/** The refusal of a message whose first call's worst case the account cannot cover. */
export function shortOfCredits(hold: { amount: number; model: string }, available: number): ApiError {
  return new ApiError(
    'insufficient_credits',
    `This message may cost up to ${hold.amount} credits on ${hold.model}; ${available} are available`,
  );
}

function systemOf(options: Pick<AgentTurnOptions, 'agent'>) {
  return { role: 'system' as const, content: options.agent.systemPrompt };
}

/** The tools of an agent's turn, as the turn's input carries them, with their specs and prompt tokens. */
function offerOf(list: OfferedTool[]): ToolOffer {
  const tools = Object.fromEntries(list.map((tool) => [tool.name, tool]));
  const specs = list.map(toToolSpec);
  const tokens = specs.length ? countPromptTokens([{ role: 'system', content: JSON.stringify(specs) }]) : 0;
  return { tools, specs, tokens };
}

/** A built-in tool as a turn offers it. */
export function offeredTool(tool: ReturnType<typeof configuredTools>[number]): OfferedTool {
  return {
    name: tool.name,
    description: tool.description,
    parameters: toolJsonSchema(tool),
    timeoutMs: tool.timeoutMs,
    maximumAttempts: tool.retry.maximumAttempts,
    initialIntervalMs: tool.retry.initialIntervalMs,
    ...(tool.needsApproval ? { needsApproval: true } : {}),
  };
}

interface ToolOffer {
  tools: Record<string, OfferedTool>;
  specs: Array<ReturnType<typeof toToolSpec>>;
  tokens: number;
}

function toToolSpec(tool: OfferedTool) {
  return {
    type: 'function' as const,
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** The events a turn opened with its context journals (common/chat-turn.ts, `openingEvents`). */
function openingEventsOf(input: ChatTurnInput): SequencedStreamEvent[] {
  const start = turnStartEvent({
    turnId: input.turnId,
    sessionKey: input.sessionKey,
    model: input.requestedModel,
    agent: input.agent,
  });
  return openingEvents(start, input.openingMemories);
}
