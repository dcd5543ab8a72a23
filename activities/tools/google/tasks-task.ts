/** Google Tasks tasks as the tasks tools present them. */
import { z } from 'zod';

export interface Task {
  id: string;
  title?: string;
  notes?: string;
  status?: 'needsAction' | 'completed';
  due?: string;
  completed?: string;
  parent?: string;
}

export const taskListInput = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_@-]+$/, 'a task list id (from tasks_list) or @default')
  .optional()
  .describe('The task list id (from tasks_list); default: the user’s default list');

export function presentTask(task: Task) {
  return {
    id: task.id,
    title: task.title ?? '',
    ...(task.notes ? { notes: task.notes } : {}),
    // Google keeps only the date of a due time.
    ...(task.due ? { due: task.due.slice(0, 10) } : {}),
    status: task.status === 'completed' ? 'completed' : 'open',
    ...(task.completed ? { completed: task.completed } : {}),
    ...(task.parent ? { parent: task.parent } : {}),
  };
}
