/**
 * Scheduled tasks (spec 4.5): create, list, change (pause and resume with `enabled`), delete. Each task is a
 * Temporal Schedule `schedule-<task id>` running the agent with the message in the task's session
 * `schedule:<task id>` (api/services/schedules/service.ts). Every endpoint needs a login; another user's task is
 * answered as one that does not exist (404).
 */
import Router from '@koa/router';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { ScheduleService } from '../../../services/schedules/service.ts';
import { createTaskSchema, updateTaskSchema } from './schema.ts';

export function scheduleRoutes(schedules: ScheduleService) {
  const router = new Router<CallerState>();

  router.post('/schedule/tasks', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = createTaskSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.status = 201;
    context.body = await schedules.create(principal, parsed.data);
  });

  router.get('/schedule/tasks', async (context) => {
    const principal = requireCaller(context.state);
    context.body = { tasks: await schedules.list(principal) };
  });

  router.get('/schedule/tasks/:id', async (context) => {
    const principal = requireCaller(context.state);
    context.body = await schedules.get(principal, context.params.id!);
  });

  router.patch('/schedule/tasks/:id', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = updateTaskSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await schedules.update(principal, context.params.id!, parsed.data);
  });

  router.delete('/schedule/tasks/:id', async (context) => {
    const principal = requireCaller(context.state);
    const id = context.params.id!;
    await schedules.remove(principal, id);
    context.body = { id, deleted: true };
  });

  return router;
}
