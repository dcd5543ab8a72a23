/**
 * The activities of a scheduled run (workflows/scheduled-run.workflow.ts) that only the agent service can do: they
 * need its agent catalogue and the chat preparation its API uses (AgentChat.prepare), so they run on the agent
 * service's own task queue (`<task queue>-agents`, common/schedules.ts), served by an activity-only worker in each
 * process that serves the agent service (api/server.ts). One implementation of a turn's preparation: the API's.
 */
import type { PreparedScheduledRun, ScheduledRunRecord } from '../../../common/schedules.ts';
import { taskSessionKey } from '../../../common/schedules.ts';
import type { ScheduleActivities } from '../../../workflows/scheduled-run.workflow.ts';
import type { AgentRuns } from '../agent-runs/prepare.ts';
import type { ScheduleService } from './service.ts';

export function createScheduleActivities(dependencies: {
  schedules: ScheduleService;
  /** The one preparation of unattended agent runs (api/services/agent-runs/prepare.ts). */
  runs: AgentRuns;
}): ScheduleActivities {
  const { schedules, runs } = dependencies;
  return {
    /**
     * Reads the task and prepares its turn in the task's session for its owner (credits held as for any message):
     * skipped when the task is gone or paused, refused with the API's error (no credits, agent gone, plan). The answer
     * also goes to the owner's linked chats.
     */
    async prepareScheduledTurn({ taskId }): Promise<PreparedScheduledRun> {
      const task = await schedules.row(taskId);
      if (!task) return { kind: 'skipped', reason: `the task ${taskId} was deleted` };
      if (!task.enabled) return { kind: 'skipped', reason: `the task ${taskId} is paused` };
      return runs.prepare({
        userId: task.user_id,
        message: {
          sessionKey: taskSessionKey(taskId),
          channel: 'schedule',
          message: task.message,
          agentId: task.agent_id,
        },
        origin: 'schedule',
        toLinkedChats: true,
      });
    },

    async recordScheduledRun(record: ScheduledRunRecord): Promise<void> {
      await schedules.record(record);
    },
  };
}
