/**
 * The activities of a scheduled run (workflows/scheduled-run.workflow.ts) that only the agent service can do: they
 * need its agent catalogue and the chat preparation its API uses (AgentChat.prepare), so they run on the agent
 * service's own task queue (`<task queue>-agents`, common/schedules.ts), served by an activity-only worker in each
 * process that serves the agent service (api/server.ts). One implementation of a turn's preparation: the API's.
 */
import type { ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import type { MessengerPlatform } from '../../../activities/messengers/messenger.ts';
import type { PreparedScheduledRun, ScheduledRunRecord } from '../../../common/schedules.ts';
import { scheduledDeliveryId, taskSessionKey } from '../../../common/schedules.ts';
import type { Pool } from '../../../db/pool.ts';
import type { ScheduleActivities } from '../../../workflows/scheduled-run.workflow.ts';
import { ApiError } from '../../errors.ts';
import type { AgentChat } from '../agents/agent-chat.ts';
import type { Principal } from '../apikeys/service.ts';
import type { ScheduleService } from './service.ts';

export function createScheduleActivities(dependencies: {
  pool: Pool;
  schedules: ScheduleService;
  agentChat: AgentChat;
  conversations: ConversationStore;
  principalForUser(userId: string): Promise<Principal | null>;
  /** The messaging apps this deployment can send to. */
  platforms: MessengerPlatform[];
}): ScheduleActivities {
  const { pool, schedules, agentChat, conversations, platforms } = dependencies;
  return {
    /**
     * Reads the task and prepares its turn in the task's session for its owner (credits held as for any message):
     * skipped when the task is gone or paused, refused with the API's error (no credits, agent gone, plan).
     */
    async prepareScheduledTurn({ taskId }): Promise<PreparedScheduledRun> {
      const task = await schedules.row(taskId);
      if (!task) return { kind: 'skipped', reason: `the task ${taskId} was deleted` };
      if (!task.enabled) return { kind: 'skipped', reason: `the task ${taskId} is paused` };
      const principal = await dependencies.principalForUser(task.user_id);
      if (!principal) {
        return { kind: 'refused', errorType: 'not_found', message: `No user ${task.user_id}`, turnId: null };
      }
      let prepared;
      try {
        prepared = await agentChat.prepare(principal, {
          sessionKey: taskSessionKey(taskId),
          channel: 'schedule',
          message: task.message,
          agentId: task.agent_id,
        });
      } catch (error) {
        if (error instanceof ApiError) {
          return { kind: 'refused', errorType: error.type, message: error.message, turnId: null };
        }
        throw error;
      }
      const { input, agent } = prepared;
      // The owner's linked chats (the account's, as team broadcasts reach them): the task's own session is never
      // linked itself, since nobody can type `/link` in it.
      const deliverTo = (await conversations.linkedChats(`user:${task.user_id}`)).filter((chat) =>
        platforms.includes(chat.platform),
      );
      for (const chat of deliverTo) {
        // Each chat's send is counted on an event row (parts sent), as a messaging app's own answers are.
        await pool.query(
          `insert into messenger_events (id, input, started, replied_parts, created_at)
           values ($1, null, true, 0, now()) on conflict (id) do nothing`,
          [scheduledDeliveryId(input.turnId, chat)],
        );
      }
      return { kind: 'turn', turn: input, agentName: agent.name, deliverTo };
    },

    async recordScheduledRun(record: ScheduledRunRecord): Promise<void> {
      await schedules.record(record);
    },
  };
}
