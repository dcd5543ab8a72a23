import { defineEntity, p } from '@mikro-orm/core';

/**
 * A scheduled task of the agent service (spec 4.5): an agent run with a message on a cron, in the task's own session
 * (`schedule:<id>`), for its owner. The source of truth for listing; the firing is a Temporal Schedule
 * (`schedule-<id>`, paused while `enabled` is false). The last run's outcome is written by the run itself.
 * Reads and writes go through api/services/schedules/ (plain SQL).
 */
export const ScheduleTask = defineEntity({
  name: 'ScheduleTask',
  tableName: 'schedule_tasks',
  properties: {
    /** `tsk_…` */
    id: p.string().primary(),
    userId: p.string(),
    agentId: p.string(),
    message: p.text(),
    cron: p.string(),
    /** IANA time zone the cron is read in. */
    timezone: p.string(),
    enabled: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
    lastRunAt: p.datetime().nullable(),
    /** `running`, `done` or `failed`. */
    lastRunStatus: p.string().nullable(),
    lastTurnId: p.string().nullable(),
    lastError: p.text().nullable(),
  },
  indexes: [{ name: 'schedule_tasks_user_id_index', properties: ['userId'] }],
});
