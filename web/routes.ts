/**
 * The web app's own paths, in one place: the app's router (web/src/app.tsx) draws them and the agent service answers
 * them with index.html (api/agents/web.ts). None is a path of the API: `/agents`, `/memory/…`, `/teams`, `/schedule/…`
 * and `/upload` are the API's, so the pages are `/my-agents`, `/memories`, `/my-teams`, `/schedules` and `/files`.
 * The operator console is a section of this same app under `/admin` (its API is `/admin/api/…`, never a page).
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
  admin: '/admin',
  adminUsers: '/admin/users',
  adminUser: '/admin/users/:user_id',
  adminActivity: '/admin/activity',
  adminAudit: '/admin/audit',
} as const;

/** Whether `path` is one of the app's pages (a path the server answers with index.html for a browser). */
export function isPagePath(path: string): boolean {
  if (path === '/') return true;
  const [, first, ...rest] = path.split('/');
  if (first === 'chats') return rest.length === 1 && rest[0] !== '';
  // `/admin`, `/admin/users`, `/admin/users/<id>`, `/admin/activity`, `/admin/audit`; `/admin/api/…` is the
  // console's API.
  if (first === 'admin') {
    if (rest.length === 0) return true;
    if (rest[0] === 'users') return rest.length === 1 || (rest.length === 2 && rest[1] !== '');
    return rest.length === 1 && (rest[0] === 'activity' || rest[0] === 'audit');
  }
  return (
    rest.length === 0 && Object.values(pagePaths).includes(`/${first}` as (typeof pagePaths)[keyof typeof pagePaths])
  );
}
