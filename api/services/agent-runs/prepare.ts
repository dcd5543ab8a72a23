/**
 * The preparing half of an unattended agent run (common/agent-runs.ts), in the agent service's process (its agent
 * catalogue and chat preparation: AgentChat.prepare, the API's own): the owner's turn with the agent, credits held,
 * and the chats its answer goes to, each with its `messenger_events` row made now so the send counts its parts and
 * is sent once. Scheduled runs (api/services/schedules/activities.ts) and webhook runs
 * (api/services/webhooks/activities.ts) prepare through here.
 */
import type { ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import type { MessengerPlatform, MessengerTarget } from '../../../common/messengers.ts';
import { runDeliveryId, type PreparedAgentTurn, type RefusedAgentTurn } from '../../../common/agent-runs.ts';
import type { Pool } from '../../../db/pool.ts';
import { ApiError } from '../../errors.ts';
import type { AgentChat, AgentMessage } from '../agents/agent-chat.ts';
import type { Principal } from '../apikeys/service.ts';

export interface AgentRunPreparation {
  pool: Pool;
  agentChat: AgentChat;
  conversations: ConversationStore;
  principalForUser(userId: string): Promise<Principal | null>;
  /** The messaging apps this deployment can send to. */
  platforms: MessengerPlatform[];
}

export class AgentRuns {
  private readonly dependencies: AgentRunPreparation;

  constructor(dependencies: AgentRunPreparation) {
    this.dependencies = dependencies;
  }

  /**
   * Prepares `message` as a turn for the user (credits held as for any message): refused with the API's error (no
   * such user, no credits, agent gone, plan). The answer goes to `deliverTo` and, with `toLinkedChats`, to every
   * messaging app chat linked to the owner's account (`ConversationStore.linkedChats`); `origin` names the sends.
   */
  async prepare(request: {
    userId: string;
    message: AgentMessage;
    origin: string;
    toLinkedChats: boolean;
    deliverTo?: MessengerTarget[];
  }): Promise<PreparedAgentTurn | RefusedAgentTurn> {
    const { agentChat } = this.dependencies;
    const principal = await this.dependencies.principalForUser(request.userId);
    if (!principal) {
      return { kind: 'refused', errorType: 'not_found', message: `No user ${request.userId}`, turnId: null };
    }
    let prepared;
    try {
      prepared = await agentChat.prepare(principal, request.message);
    } catch (error) {
      if (error instanceof ApiError)
        return { kind: 'refused', errorType: error.type, message: error.message, turnId: null };
      throw error;
    }
    const { input, agent } = prepared;
    const linked = request.toLinkedChats ? await this.linkedChats(request.userId) : [];
    const deliverTo = [...(request.deliverTo ?? []), ...linked];
    await this.recordSends(request.origin, input.turnId, deliverTo);
    // A message routed inside its turn (a Slack channel's, with no agent named) names its agent once routed.
    return { kind: 'turn', turn: input, agentName: agent?.name ?? 'the agent routing picks', deliverTo };
  }

  /**
   * The owner's linked chats on the platforms configured here (the account's, as team broadcasts reach them): a
   * run's own session is never linked itself, since nobody can type `/link` in it.
   */
  async linkedChats(userId: string): Promise<MessengerTarget[]> {
    const { conversations, platforms } = this.dependencies;
    return (await conversations.linkedChats(`user:${userId}`)).filter((chat) => platforms.includes(chat.platform));
  }

  /** Each chat's send is counted on an event row (parts sent), as a messaging app's own answers are. */
  async recordSends(origin: string, name: string, chats: MessengerTarget[]): Promise<void> {
    for (const chat of chats) {
      await this.dependencies.pool.query(
        `insert into messenger_events (id, input, started, replied_parts, created_at)
         values ($1, null, true, 0, now()) on conflict (id) do nothing`,
        [runDeliveryId(origin, name, chat)],
      );
    }
  }
}
