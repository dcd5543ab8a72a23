/**
 * `tasks_list`: the user's task lists (`tasklists.list`) and the tasks of one (`tasks.list`, the default list unless
 * named), open ones by default. A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { presentTask, taskListInput, type Task } from './tasks-task.ts';
import { segment, workspaceOf, workspaceTool } from './workspace-tool.ts';

export const tasksListTool = defineTool({
  name: 'tasks_list',
  description:
    'List the user’s Google Tasks: the task lists, and the tasks of one list (the default list unless list_id is ' +
    'given) with their ids, titles, notes, due dates and status; completed tasks only when asked.',
  input: z
    .object({
      list_id: taskListInput,
      show_completed: z.boolean().optional().describe('Include completed tasks (default false)'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 12_000,
  async run({ list_id = '@default', show_completed = false }, context) {
    const { google, userId } = workspaceOf(context);
    const lists = (
      await google.request(
        userId,
        { family: 'tasks', path: '/users/@me/lists', query: { maxResults: 100 } },
        context.signal,
      )
    ).json as { items?: Array<{ id: string; title?: string }> };
    const tasks = (
      await google.request(
        userId,
        {
          family: 'tasks',
          path: `/lists/${segment(list_id)}/tasks`,
          query: { showCompleted: show_completed, showHidden: show_completed, maxResults: 100 },
        },
        context.signal,
      )
    ).json as { items?: Task[] };
    const items = (tasks.items ?? []).map(presentTask);
    return {
      lists: (lists.items ?? []).map((list) => ({ id: list.id, title: list.title ?? '' })),
      list_id,
      tasks: items,
      ...(items.length === 0 ? { note: show_completed ? 'the list is empty' : 'no open tasks in this list' } : {}),
    };
  },
});
