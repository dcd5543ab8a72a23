/** The operator console's pages (`/admin…`, web/routes.ts): one chunk, loaded when an admin first opens one. */
export { AdminActivityPage } from './activity.tsx';
export { AdminAuditPage } from './audit.tsx';
export { AdminOverviewPage } from './overview.tsx';
export { AdminUserPage } from './user.tsx';
export { AdminUsersPage } from './users.tsx';
