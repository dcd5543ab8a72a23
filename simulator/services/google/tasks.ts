/**
 * Google Tasks API v1, enough for the tasks tools (`/google/tasks/v1/…`):
 * - `GET users/@me/lists`: the task lists.
 * - `GET lists/{list}/tasks?showCompleted&maxResults`: a list's tasks in order (completed ones unless
 *   `showCompleted=false`); `@default` is the first list; an unknown list is 404.
 * - `POST lists/{list}/tasks {title, notes?, due?}`, `GET|PATCH lists/{list}/tasks/{task}` (`status: completed` sets
 *   `completed`; `needsAction` clears it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import { newId, type Account, type Task, type TaskList } from './accounts.ts';
import { badRequest, notFound, readJson } from './http.ts';

const base = 'https://www.googleapis.com/tasks/v1';

export async function tasks(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
): Promise<void> {
  if (request.method === 'GET' && path === '/users/@me/lists') {
    return sendJson(response, 200, {
      kind: 'tasks#taskLists',
      etag: `"${account.counter}"`,
      items: account.taskLists.map((list) => ({
        kind: 'tasks#taskList',
        id: list.id,
        etag: `"${list.updated}"`,
        title: list.title,
        updated: list.updated,
        selfLink: `${base}/users/@me/lists/${list.id}`,
      })),
    });
  }
  const match = /^\/lists\/([^/]+)\/tasks(?:\/([^/]+))?$/.exec(path);
  if (!match) return notFound(response);
  const listId = decodeURIComponent(match[1]!);
  const list =
    listId === '@default' ? account.taskLists[0] : account.taskLists.find((candidate) => candidate.id === listId);
  if (!list) return notFound(response, 'Task list not found.');
  const taskId = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
  if (taskId === undefined) {
    if (request.method === 'GET') {
      const showCompleted = url.searchParams.get('showCompleted') !== 'false';
      const items = list.tasks.filter((task) => showCompleted || task.status !== 'completed');
      return sendJson(response, 200, {
        kind: 'tasks#tasks',
        etag: `"${list.updated}"`,
        items: items.map((task) => present(list, task)),
      });
    }
    if (request.method === 'POST') {
      const body = await readJson(request);
      if (!body || typeof body.title !== 'string') return badRequest(response, 'Invalid task: title is required');
      const now = new Date().toISOString();
      const task: Task = {
        id: newId(account, 'task'),
        title: body.title,
        ...(typeof body.notes === 'string' ? { notes: body.notes } : {}),
        ...(typeof body.due === 'string' ? { due: dueDate(body.due) } : {}),
        status: 'needsAction',
        updated: now,
        position: String(list.tasks.length).padStart(20, '0'),
      };
      list.tasks.push(task);
      list.updated = now;
      return sendJson(response, 200, present(list, task));
    }
    return notFound(response);
  }
  const task = list.tasks.find((candidate) => candidate.id === taskId);
  if (!task) return notFound(response, 'Task not found.');
  if (request.method === 'GET') return sendJson(response, 200, present(list, task));
  if (request.method === 'PATCH' || request.method === 'PUT') {
    const body = await readJson(request);
    if (!body) return badRequest(response, 'Invalid JSON payload received.');
    if (typeof body.title === 'string') task.title = body.title;
    if (typeof body.notes === 'string') task.notes = body.notes;
    if (typeof body.due === 'string') task.due = dueDate(body.due);
    if (body.status === 'completed' && task.status !== 'completed') {
      task.status = 'completed';
      task.completed = new Date().toISOString();
    } else if (body.status === 'needsAction') {
      task.status = 'needsAction';
      delete task.completed;
    } else if (body.status !== undefined && body.status !== 'completed') {
      return badRequest(response, 'Invalid value for: status');
    }
    task.updated = new Date().toISOString();
    return sendJson(response, 200, present(list, task));
  }
  return notFound(response);
}

/** Google Tasks keeps only the date of a due time (at midnight UTC). */
const dueDate = (value: string) => `${value.slice(0, 10)}T00:00:00.000Z`;

function present(list: TaskList, task: Task) {
  return {
    kind: 'tasks#task',
    id: task.id,
    etag: `"${task.updated}"`,
    title: task.title,
    updated: task.updated,
    selfLink: `${base}/lists/${list.id}/tasks/${task.id}`,
    position: task.position,
    ...(task.notes ? { notes: task.notes } : {}),
    status: task.status,
    ...(task.due ? { due: task.due } : {}),
    ...(task.completed ? { completed: task.completed } : {}),
    links: [],
    webViewLink: `https://tasks.google.com/task/${task.id}`,
  };
}
