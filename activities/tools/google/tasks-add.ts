/**
 * `tasks_add`: a new task in one of the user's Google Tasks lists (`tasks.insert`). The user approves it first; it
 * runs once per tool call (Tasks has no idempotency key: see activities/google/workspace-writes.ts).
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { presentTask, taskListInput, type Task } from './tasks-task.ts';
import { segment, workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const tasksAddTool = defineTool({
  name: 'tasks_add',
  description:
    'Add a task to the user’s Google Tasks (the default list unless list_id is given): a title, optional notes and ' +
    'an optional due date. The user is asked to approve it.',
  input: z
    .object({
      title: z.string().trim().min(1).max(1_000),
      notes: z.string().max(8_000).optional(),
      due: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date: YYYY-MM-DD')
        .optional()
        .describe('Due date (YYYY-MM-DD); Google Tasks keeps no time of day'),
      list_id: taskListInput,
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ title, notes, due, list_id = '@default' }, context) {
    const { google, userId, write } = writeOf(context, 'tasks_add');
    return google.once(write, async () => {
      const task = (
        await google.request(
          userId,
          {
            family: 'tasks',
            method: 'POST',
            path: `/lists/${segment(list_id)}/tasks`,
            json: { title, ...(notes ? { notes } : {}), ...(due ? { due: `${due}T00:00:00.000Z` } : {}) },
          },
          context.signal,
        )
      ).json as Task;
      return { added: true, list_id, task: presentTask(task) };
    });
  },
});
