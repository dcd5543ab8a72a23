/** `GET /dashboard` (api/agents/routes/dashboard/routes.ts): its query and its answer. */
import { z } from 'zod';

export const maxDashboardDays = 90;

export const dashboardQuerySchema = z.strictObject({
  /** The period of the daily series and the rankings: the last `days` days (UTC), today included. */
  days: z.coerce
    .number('must be a number of days')
    .int('must be a whole number of days')
    .min(1)
    .max(maxDashboardDays, `must be at most ${maxDashboardDays}`)
    .default(30),
});

const count = z.number().int();

export const dashboardSchema = z.object({
  /** `user`: the caller's own figures; `platform`: every account's (the operator, by the master key). */
  scope: z.enum(['user', 'platform']),
  days: count,
  /** The period's first instant (midnight UTC, `days - 1` days ago). */
  since: z.iso.datetime(),
  generated_at: z.iso.datetime(),
  totals: z.object({ messages: count, turns: count, failed_turns: count, tool_calls: count, credits_used: count }),
  /** One entry per day that had any, oldest first (`YYYY-MM-DD`, UTC). */
  messages_per_day: z.array(z.object({ day: z.iso.date(), messages: count })),
  turns_per_day: z.array(z.object({ day: z.iso.date(), turns: count, failed: count })),
  credits_per_day: z.array(z.object({ day: z.iso.date(), credits: count })),
  /** Credits settled per answering agent; `agent_id: null` holds what no agent turn spent (routing, completions, media). */
  credits_per_agent: z.array(z.object({ agent_id: z.string().nullable(), credits: count })),
  /** The ten agents with the most turns. */
  top_agents: z.array(z.object({ agent_id: z.string(), turns: count, failed: count })),
  /** The ten tools called most. */
  top_tools: z.array(z.object({ tool: z.string(), calls: count })),
  /** Scheduled tasks (at most 100: the most recently run first), with their counts. */
  schedules: z.object({
    total: count,
    enabled: count,
    /** Every task by its last run's status (`done`, `failed`, …; `never` for a task that has not run yet). */
    last_run_by_status: z.record(z.string(), count),
    tasks: z.array(
      z.object({
        task_id: z.string(),
        agent_id: z.string(),
        cron: z.string(),
        timezone: z.string(),
        enabled: z.boolean(),
        last_run_at: z.iso.datetime().nullable(),
        last_run_status: z.string().nullable(),
        next_run_at: z.iso.datetime().nullable(),
      }),
    ),
  }),
  /** Media jobs of the period by status (and by kind). */
  media_jobs: z.object({
    by_status: z.record(z.string(), count),
    by_kind: z.record(z.string(), z.record(z.string(), count)),
  }),
  /** Inbound webhook runs of the period by status; null where this deployment records none (no `webhook_runs`). */
  webhook_runs: z.object({ by_status: z.record(z.string(), count) }).nullable(),
});

export type Dashboard = z.infer<typeof dashboardSchema>;
