/** Contracts of scheduled tasks (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { createTaskSchema, updateTaskSchema } from './schema.ts';

const tags = ['Scheduled tasks'];

const task = z
  .strictObject({
    id: z.string(),
    agent_id: z.string(),
    message: z.string(),
    cron: z.string(),
    timezone: z.string(),
    enabled: z.boolean(),
    schedule_id: z.string(),
    session_id: z.string(),
    next_runs: z.array(isoDate).meta({ description: 'The next fire times, none while paused' }),
    last_run: z
      .strictObject({
        at: isoDate,
        status: z.string(),
        turn_id: z.string().nullable(),
        error: z.string().optional(),
        queue_position: z
          .number()
          .int()
          .optional()
          .meta({ description: 'While the run waits in the capacity queue (status `queued`): 1 = next' }),
      })
      .nullable(),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'ScheduledTask' });

const notFound = { 404: 'No such task of the caller’s, or no such agent' } as const;

export const scheduleContracts = [
  route({
    method: 'POST',
    path: '/schedule/tasks',
    summary: 'Schedule an agent to run a message on a cron',
    tags,
    access: 'caller',
    request: { body: createTaskSchema },
    responses: { 201: json(task, 'The task') },
    errors: notFound,
  }),
  route({
    method: 'GET',
    path: '/schedule/tasks',
    summary: 'The caller’s tasks',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ tasks: z.array(task) }), 'The tasks') },
  }),
  route({
    method: 'GET',
    path: '/schedule/tasks/:id',
    summary: 'One task with its next and last runs',
    tags,
    access: 'caller',
    responses: { 200: json(task, 'The task') },
    errors: notFound,
  }),
  route({
    method: 'PATCH',
    path: '/schedule/tasks/:id',
    summary: 'Change a task (`enabled` pauses or resumes it)',
    tags,
    access: 'caller',
    request: { body: updateTaskSchema },
    responses: { 200: json(task, 'The task as changed') },
    errors: notFound,
  }),
  route({
    method: 'DELETE',
    path: '/schedule/tasks/:id',
    summary: 'Delete a task',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Deleted') },
    errors: notFound,
  }),
];
