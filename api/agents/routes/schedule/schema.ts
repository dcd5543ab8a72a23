/** Scheduled task request bodies (spec 4.5), strict. The cron and time zone are checked by the service. */
import { z } from 'zod';

/** Characters of a task's message at most (the chat takes the same). */
export const TASK_MESSAGE_MAX_CHARS = 32_000;

const fields = {
  cron: z.string().trim().min(1, 'cron must not be empty').max(200),
  agent_id: z.string().trim().min(1).max(255),
  message: z.string().trim().min(1, 'message must not be empty').max(TASK_MESSAGE_MAX_CHARS),
  enabled: z.boolean(),
  /** IANA time zone the cron is read in (default UTC). */
  timezone: z.string().trim().min(1).max(64),
};

/** `POST /schedule/tasks`: enabled defaults to true, timezone to UTC. */
export const createTaskSchema = z
  .object({ ...fields, enabled: fields.enabled.default(true), timezone: fields.timezone.default('UTC') })
  .strict();

/** `PATCH /schedule/tasks/{id}`: any of the fields; `enabled` pauses or resumes the schedule. */
export const updateTaskSchema = z
  .object(fields)
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one of cron, agent_id, message, enabled, timezone');

export type CreateTask = z.infer<typeof createTaskSchema>;
export type UpdateTask = z.infer<typeof updateTaskSchema>;
