/**
 * The agent service's chat (spec 4.1, 6): routes a message to an agent, then runs it as the conversation's next turn
 * of the one chat-turn workflow (api/services/chat/service.ts, workflows/chat-turn.workflow.ts) with that agent's
 * system prompt, model, tools and the caller's relevant memories, or as an agent loop. Approvals and loop
 * cancellation reach the running workflow as a Temporal update and signal.
 */
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { toolByName } from '../../../activities/tools/index.ts';
import type { WorkspaceName } from '../../../common/agents.ts';
import { resolveModel, type Catalogue } from '../../../common/catalogue.ts';
import type { ToolSettings } from '../../../activities/tools/tool.ts';
import { turnOfApproval } from '../../../common/agent-turn.ts';
import type { ChatTurnInput, RoutedAgent } from '../../../common/chat-turn.ts';
import type { SessionRef } from '../../../activities/conversations/conversation-store.ts';
import type { ErrorType } from '../../../common/errors.ts';
import { errorStatus } from '../../../common/errors.ts';
import { cancelLoopUpdate, decideApprovalUpdate } from '../../../workflows/chat-turn.workflow.ts';
import { ApiError } from '../../errors.ts';
import type { Principal } from '../apikeys/service.ts';
import { offeredTool, ownerOf, type ChatService, type StartedTurn } from '../chat/service.ts';
import type { AgentRouter, RoutableAgent } from './agent-router.ts';

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
  images?: string[];
  preferredAgents?: string[];
  /** The agent named by the caller (the external API's `agent_id`): no routing. */
  agentId?: string;
  presetInstruction?: string;
  loop?: { maxIterations?: number; budgetCredits?: number | null };
}

export interface StartedAgentTurn extends StartedTurn {
  routed: RoutedAgent;
}

export class AgentChat {
  private readonly dependencies: {
    client: Client;
    chat: ChatService;
    router: AgentRouter;
    agents: AgentSource;
    toolSettings: ToolSettings;
    settings: AgentChatSettings;
    catalogue: Catalogue;
    /** Whether the user's Google login is connected and granted the workspace's scope (absent: never). */
    workspaceConnected?: (userId: string, workspace: WorkspaceName) => Promise<boolean>;
  };

  constructor(dependencies: AgentChat['dependencies']) {
    this.dependencies = dependencies;
  }

  /** Routes the message and starts its turn (or loop). Refusals are ApiErrors, and nothing is left running. */
  async start(principal: Principal, request: AgentMessage): Promise<StartedAgentTurn> {
    const { input, routed, agent } = await this.prepare(principal, request);
    const started = await this.dependencies.chat.launch(input, {
      kind: input.loop ? 'agent-loop' : 'agent-turn',
      memo: { session: request.sessionKey, channel: request.channel, agent: agent.id, confidence: routed.confidence },
      summary: `${input.loop ? 'Agent loop' : 'Agent turn'} ${input.turn} of session ${request.sessionKey}: ${agent.name} (routed by ${routed.method}, confidence ${routed.confidence}), for ${principal.userId}`,
    });
    return { ...started, routed };
  }

  /**
   * Routes the message and prepares its turn (session opened, turn numbered, credits held): the turn's workflow
   * input, for `start` or for a workflow that runs the turn as its child (a scheduled run). Refusals are ApiErrors.
   */
  async prepare(
    principal: Principal,
    request: AgentMessage,
  ): Promise<{ input: ChatTurnInput; routed: RoutedAgent; agent: ChatAgent }> {
    const { chat, router, agents, settings } = this.dependencies;
    const all = await agents.list(principal);
    let candidates = all;
    let routed: RoutedAgent;
    let agent: ChatAgent;
    let routingWorkflowId: string | undefined;
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
      const decision = await router.route(principal, request.message, candidates);
      agent = decision.agent as ChatAgent;
      routingWorkflowId = decision.workflowId;
      routed = { id: agent.id, name: agent.name, confidence: decision.confidence, method: decision.method };
    }
    if (agent.workspace && !(await this.dependencies.workspaceConnected?.(principal.userId, agent.workspace))) {
      throw new WorkspaceLoginRequired(agent);
    }
    const tools = agent.tools.flatMap((name) => {
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
    const loop: ChatTurnInput['loop'] = request.loop
      ? {
          maxIterations: Math.min(request.loop.maxIterations ?? settings.maxIterations, settings.maxIterations),
          budgetCredits: request.loop.budgetCredits ?? null,
          iterationsPerRun: settings.iterationsPerRun,
        }
      : undefined;
    const canSee = resolveModel(this.dependencies.catalogue, agent.model)?.model.capabilities.includes('vision');
    const model = request.images?.length && !canSee ? settings.visionModel : agent.model;
    const input = await chat.prepare(
      { principal },
      { message: request.message, session_id: request.sessionKey, channel: request.channel, model },
      true,
      request.session,
      {
        agent: {
          ...routed,
          systemPrompt,
          ...(agent.temperature !== null && agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
        },
        tools,
        memories: { userId: principal.userId, limit: settings.memoryLimit },
        approvalTimeoutMs: settings.approvalTimeoutMs,
        ...(routingWorkflowId ? { routingWorkflowId } : {}),
        ...(request.images?.length ? { images: request.images } : {}),
        ...(loop ? { loop } : {}),
      },
    );
    return { input, routed, agent };
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

  /** Asks a running loop to stop after its current iteration. */
  async cancel(principal: Principal, turnId: string): Promise<void> {
    if (!(await this.dependencies.chat.ownsTurn({ principal }, turnId))) {
      throw new ApiError('not_found', `No chat turn ${turnId}`);
    }
    try {
      await this.dependencies.client.workflow
        .getHandle(turnId)
        .executeUpdate(cancelLoopUpdate, { args: [{ by: ownerOf({ principal }) }] });
    } catch (error) {
      throw updateRefusal(error, `turn ${turnId}`);
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

/** Why a turn refused an update (its validator's failure), as the API's error. */
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
