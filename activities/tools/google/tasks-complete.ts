/**
 * `tasks_complete`: marks a task of the user's Google Tasks done (`tasks.patch` with `status: completed`). The user
 * approves it first; it runs once per tool call.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { presentTask, taskListInput, type Task } from './tasks-task.ts';
import { resourceId, segment, workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const tasksCompleteTool = defineTool({
  name: 'tasks_complete',
  description:
    'Mark a task of the user’s Google Tasks as completed, by its id (from tasks_list). The user is asked to approve it.',
  input: z
    .object({
      task_id: resourceId('The task id (from tasks_list)'),
      list_id: taskListInput,
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ task_id, list_id = '@default' }, context) {
    const { google, userId, write } = writeOf(context, 'tasks_complete');
    return google.once(write, async () => {
      const task = (
        await google.request(
          userId,
          {
            family: 'tasks',
            method: 'PATCH',
            path: `/lists/${segment(list_id)}/tasks/${segment(task_id)}`,
            json: { status: 'completed' },
          },
          context.signal,
        )
      ).json as Task;
      return { completed: true, list_id, task: presentTask(task) };
    });
  },
});
