/**
 * The Google scopes Tessera asks for, and which workspace agent each one enables. One scope per agent, the broadest
 * its tools need (Gmail modify reads, drafts and sends; Calendar, Drive, Sheets, Docs, Contacts and Tasks read and
 * write). A login that granted only some of them (Google's consent screen lets the user untick scopes) enables only
 * those agents: `GET /auth/google/status` says which, and a workspace agent without its scope sends the user to
 * `/auth/google` as one without any login does (spec 7.2).
 */
import { workspaceNames, type WorkspaceName } from '../../common/agents.ts';

export const loginScopes = ['openid', 'email', 'profile'];

/** The scope each workspace agent needs. */
export const workspaceScopeOf: Record<WorkspaceName, string> = {
  mail: 'https://www.googleapis.com/auth/gmail.modify',
  calendar: 'https://www.googleapis.com/auth/calendar',
  drive: 'https://www.googleapis.com/auth/drive',
  sheets: 'https://www.googleapis.com/auth/spreadsheets',
  docs: 'https://www.googleapis.com/auth/documents',
  contacts: 'https://www.googleapis.com/auth/contacts',
  tasks: 'https://www.googleapis.com/auth/tasks',
};

/** The Google Workspace scopes the workspace tools need (`GET /auth/google/status` reports the missing ones). */
export const workspaceScopes = workspaceNames.map((name) => workspaceScopeOf[name]);

/** Which workspace agents a set of granted scopes enables. */
export function agentsEnabledBy(scopes: string[], connected: boolean): Record<WorkspaceName, boolean> {
  return Object.fromEntries(
    workspaceNames.map((name) => [name, connected && scopes.includes(workspaceScopeOf[name])]),
  ) as Record<WorkspaceName, boolean>;
}
