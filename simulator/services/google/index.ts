/**
 * Google, played under `/google` (GOOGLE_ISSUER=`<simulator>/google`, GOOGLE_API_BASE_URL=`<simulator>/google`):
 * the sign-in (./oauth.ts) and the REST APIs the workspace tools call, at their real paths and in their real JSON
 * shapes, on in-memory accounts with seed data (./accounts.ts): Gmail v1 (./gmail.ts), Calendar v3 (./calendar.ts),
 * Drive v3 and its uploads (./drive.ts), Sheets v4 (./sheets.ts), Docs v1 (./docs.ts), People v1 (./people.ts),
 * Tasks v1 (./tasks.ts).
 *
 * Every API call needs a bearer access token the simulator issued: an unknown, expired or revoked one is Google's
 * 401 (`UNAUTHENTICATED`, with `WWW-Authenticate: Bearer … error="invalid_token"`), and a token whose grant lacks the
 * API's scope Google's 403 (`insufficientPermissions`, `ACCESS_TOKEN_SCOPE_INSUFFICIENT`).
 *
 * Control, for tests (not Google's): `GET /google/_accounts/{email}` dumps the account (mail, events, files, sheets,
 * documents, tasks, the Calendar notifications it would have mailed, and counters: `refresh_grants`,
 * `rejected_tokens`, `api_calls`); `POST /google/_accounts/{email}/expire` makes its access tokens expire now.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import type { SimulatedService } from '../index.ts';
import { findAccount, type Account } from './accounts.ts';
import { calendar } from './calendar.ts';
import { docs } from './docs.ts';
import { drive } from './drive.ts';
import { gmail } from './gmail.ts';
import { googleError } from './http.ts';
import { authenticate, expireAccessTokens, handleOAuth } from './oauth.ts';
import { people } from './people.ts';
import { formatted, sheets } from './sheets.ts';
import { tasks } from './tasks.ts';

const scope = (name: string) => `https://www.googleapis.com/auth/${name}`;

type Handler = (
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
) => Promise<void> | void;

/**
 * Each API: its path prefix, what its handler's paths start after (`base`, default the prefix), the scopes that allow
 * writing, and those that also allow reading.
 */
const apis: Array<{
  prefix: string;
  base?: string;
  service: string;
  write: string[];
  read: string[];
  handle: Handler;
}> = [
  {
    prefix: '/gmail/v1',
    service: 'gmail.googleapis.com',
    write: ['https://mail.google.com/', scope('gmail.modify'), scope('gmail.compose')],
    read: [scope('gmail.readonly')],
    handle: gmail,
  },
  {
    prefix: '/calendar/v3',
    service: 'calendar-json.googleapis.com',
    write: [scope('calendar'), scope('calendar.events')],
    read: [scope('calendar.readonly'), scope('calendar.events.readonly')],
    handle: calendar,
  },
  {
    prefix: '/upload/drive/v3',
    service: 'drive.googleapis.com',
    write: [scope('drive'), scope('drive.file')],
    read: [],
    handle: (request, response, account, path, url) => drive(request, response, account, path, url, true),
  },
  {
    prefix: '/drive/v3',
    service: 'drive.googleapis.com',
    write: [scope('drive'), scope('drive.file')],
    read: [scope('drive.readonly')],
    handle: (request, response, account, path, url) => drive(request, response, account, path, url, false),
  },
  {
    prefix: '/v4',
    service: 'sheets.googleapis.com',
    write: [scope('spreadsheets'), scope('drive')],
    read: [scope('spreadsheets.readonly'), scope('drive.readonly')],
    handle: sheets,
  },
  {
    prefix: '/v1/documents',
    base: '/v1',
    service: 'docs.googleapis.com',
    write: [scope('documents'), scope('drive')],
    read: [scope('documents.readonly'), scope('drive.readonly')],
    handle: (request, response, account, path) => docs(request, response, account, path),
  },
  {
    prefix: '/v1/people',
    base: '/v1',
    service: 'people.googleapis.com',
    write: [scope('contacts')],
    read: [scope('contacts.readonly')],
    handle: (request, response, account, path, url) => people(request, response, account, path, url),
  },
  {
    prefix: '/tasks/v1',
    service: 'tasks.googleapis.com',
    write: [scope('tasks')],
    read: [scope('tasks.readonly')],
    handle: tasks,
  },
];

export const googleService: SimulatedService = {
  prefix: '/google/',
  async handle(request, response, url) {
    const path = url.pathname.slice('/google'.length);
    if (await handleOAuth(request, response, path, url)) return;
    if (path.startsWith('/_accounts/')) return control(request, response, path);
    const api = apis.find(
      (candidate) =>
        path === candidate.prefix || path.startsWith(`${candidate.prefix}/`) || path.startsWith(`${candidate.prefix}:`),
    );
    if (!api) return googleError(response, 404, `No Google API at ${url.pathname}`);
    const caller = authenticate(request);
    if (!caller.ok) {
      return googleError(
        response,
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        {
          reason: 'authError',
          headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
        },
      );
    }
    const allowed = request.method === 'GET' ? [...api.write, ...api.read] : api.write;
    if (!allowed.some((granted) => caller.scopes.includes(granted))) {
      return googleError(response, 403, 'Request had insufficient authentication scopes.', {
        reason: 'insufficientPermissions',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'ACCESS_TOKEN_SCOPE_INSUFFICIENT',
            domain: 'googleapis.com',
            metadata: { service: api.service },
          },
        ],
      });
    }
    caller.account.stats.apiCalls += 1;
    await api.handle(request, response, caller.account, path.slice((api.base ?? api.prefix).length), url);
  },
};

async function control(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
  const match = /^\/_accounts\/([^/]+)(\/expire)?$/.exec(path);
  const account = match ? findAccount(decodeURIComponent(match[1]!)) : undefined;
  if (!match || !account) return sendJson(response, 404, { error: 'no such simulated Google account' });
  if (match[2]) {
    if (request.method !== 'POST') return sendJson(response, 405, { error: 'POST' });
    return sendJson(response, 200, { expired: expireAccessTokens(account) });
  }
  sendJson(response, 200, dump(account));
}

function dump(account: Account) {
  return {
    email: account.email,
    sub: account.sub,
    refresh_grants: account.stats.refreshGrants,
    rejected_tokens: account.stats.rejectedTokens,
    api_calls: account.stats.apiCalls,
    messages: account.messages.map((message) => ({
      id: message.id,
      thread_id: message.threadId,
      labels: message.labelIds,
      headers: Object.fromEntries(message.headers.map((header) => [header.name.toLowerCase(), header.value])),
      text: message.text,
    })),
    drafts: account.drafts,
    events: account.events,
    notifications: account.notifications,
    files: account.files.map(({ content, ...file }) => ({ ...file, ...(content ? { bytes: content.length } : {}) })),
    spreadsheets: Object.fromEntries(
      [...account.spreadsheets].map(([id, spreadsheet]) => [
        id,
        spreadsheet.sheets.map((sheet) => ({ title: sheet.title, values: formatted(sheet) })),
      ]),
    ),
    documents: Object.fromEntries([...account.documents].map(([id, document]) => [id, document.text])),
    people: account.people,
    task_lists: account.taskLists,
  };
}
