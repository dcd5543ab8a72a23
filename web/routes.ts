/**
 * The web app's own paths, in one place: the app's router (web/src/app.tsx) draws them and the agent service answers
 * them with index.html (api/agents/web.ts). None is a path of the API: `/agents`, `/memory/…`, `/teams`, `/schedule/…`
 * and `/upload` are the API's, so the pages are `/my-agents`, `/memories`, `/my-teams`, `/schedules` and `/files`.
 * `/admin` (the operator console) is to be another section of this same app: add its paths here.
 */
export const pagePaths = {
  chat: '/',
  session: '/chats/:session_id',
  agents: '/my-agents',
  memories: '/memories',
  schedules: '/schedules',
  sites: '/sites',
  files: '/files',
  teams: '/my-teams',
  settings: '/settings',
} as const;

/** Whether `path` is one of the app's pages (a path the server answers with index.html for a browser). */
export function isPagePath(path: string): boolean {
  if (path === '/') return true;
  const [, first, ...rest] = path.split('/');
  if (first === 'chats') return rest.length === 1 && rest[0] !== '';
  return (
    rest.length === 0 && Object.values(pagePaths).includes(`/${first}` as (typeof pagePaths)[keyof typeof pagePaths])
  );
}
