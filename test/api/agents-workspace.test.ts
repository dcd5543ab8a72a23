/**
 * The workspace suite through HTTP (issue 18, items 7-9): the seven workspace agents' Google tools on the simulator's
 * Google (simulator/services/google/), driven by `/chat/stream` with the scripted model (`[[call <tool> <json>]]`).
 * Users log in the way `npm start` lets a person do it: `GET /auth/google`, the simulated consent page (its form
 * posted as a browser would), the callback; so every identity here was made by the real login path.
 *
 * Checked: the login through the simulated issuer, `/auth/google/status` with its agents, granular consent (an
 * agent whose scope was not granted sends the user to /auth/google, a tool whose scope is missing says so); every
 * read tool on the seed data, run at once; every write tool refused (nothing changes at Google) and approved (the
 * change happens, once); once-only writes by call key, and a write taking over a call that died midway; token
 * refresh (an access token Google rejects is refreshed once, one that expired by the clock before the call, and two
 * turns at once refresh once); revocation (the tool tells the user to log in again, status says not connected, the
 * agent redirects to /auth/google, and a new login works again).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { AgentStreamReader } from '../helpers/agent-stream.ts';
import { GoogleAccounts } from '../../activities/google/google-accounts.ts';
import { GoogleApi } from '../../activities/google/google-api.ts';
import { GoogleOAuthClient } from '../../activities/google/oauth-client.ts';
import { TokenCipher } from '../../activities/google/token-cipher.ts';
import { WorkspaceWrites } from '../../activities/google/workspace-writes.ts';
import { eventIdOf } from '../../activities/tools/google/calendar-event.ts';
import { toolByName } from '../../activities/tools/index.ts';
import { runTool } from '../../activities/tools/runtime.ts';
import { simulatedGoogle } from '../../scripts/lib/simulated-providers.ts';
import { callDirective } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const encryptionKey = randomBytes(32).toString('base64url');
const gmailScope = 'https://www.googleapis.com/auth/gmail.modify';
const tasksScope = 'https://www.googleapis.com/auth/tasks';
const allAgents = { mail: true, calendar: true, drive: true, sheets: true, docs: true, contacts: true, tasks: true };

let platform: TestPlatform;
let database: pg.Pool;
let google: Record<string, string>;

beforeAll(async () => {
  platform = await startTestPlatform((simulatorUrl) => {
    google = simulatedGoogle(simulatorUrl, {});
    return { ...google, TOKEN_ENCRYPTION_KEY: encryptionKey };
  });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

interface User {
  email: string;
  userId: string;
  key: string;
  cookie: string;
}

/**
 * A login with Google as a browser does it on `npm start`: `/auth/google` redirects to the simulated consent page,
 * whose form is posted back with the address and the ticked scopes (all of them unless `scopes` says), and the
 * simulator redirects to the callback.
 */
async function googleLogin(
  email = `ws-${randomBytes(4).toString('hex')}@example.com`,
  scopes?: string[],
): Promise<User> {
  // The account exists first, on a plan with credits for the many turns here; the Google login joins it by e-mail.
  const created = await platform.createKey(email);
  const start = await platform.agents('/auth/google');
  expect(start.status).toBe(302);
  const stateCookie = start.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith('tessera_oauth_state='))!
    .split(';')[0]!;
  const authorization = new URL(start.headers.get('location')!);
  expect(`${authorization.origin}/google`).toBe(google.GOOGLE_ISSUER);
  const page = await fetch(authorization);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('simulated');
  const requested = authorization.searchParams
    .get('scope')!
    .split(' ')
    .filter((scope) => scope.startsWith('https://'));
  const form = new URLSearchParams([...authorization.searchParams]);
  form.set('email', email);
  for (const scope of scopes ?? requested) form.append('granted_scope', scope);
  form.set('decision', 'allow');
  const decided = await fetch(`${authorization.origin}${authorization.pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    redirect: 'manual',
  });
  expect(decided.status).toBe(302);
  const callback = decided.headers.get('location')!;
  expect(callback.startsWith(`${platform.agentsUrl}/auth/google/callback?`)).toBe(true);
  const finished = await fetch(callback, {
    headers: { cookie: stateCookie, accept: 'application/json' },
    redirect: 'manual',
  });
  expect(finished.status).toBe(200);
  const body = (await finished.json()) as Json;
  const cookie = finished.headers
    .getSetCookie()
    .find((value) => value.startsWith('tessera_session='))!
    .split(';')[0]!;
  expect(created.user_id).toBe(body.user.id);
  return { email, userId: body.user.id, key: created.key, cookie };
}

/** The simulated account's state (the simulator's control API). */
async function googleState(email: string): Promise<Json> {
  const response = await fetch(`${platform.simulatorUrl}/google/_accounts/${encodeURIComponent(email)}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

async function status(user: User): Promise<Json> {
  const response = await platform.agents('/auth/google/status', { key: user.key });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

/** The token store as the worker builds it (activities/google/google-accounts.ts), on `pool`. */
function tokenStore(pool: pg.Pool): GoogleAccounts {
  return new GoogleAccounts({
    pool,
    cipher: new TokenCipher(encryptionKey),
    oauth: new GoogleOAuthClient({
      clientId: google.GOOGLE_CLIENT_ID!,
      clientSecret: google.GOOGLE_CLIENT_SECRET!,
      issuer: google.GOOGLE_ISSUER!,
    }),
  });
}

/** A message to one workspace agent (named by `preferred_agents`, so no routing call), as a new session. */
async function send(user: User, agent: string, message: string): Promise<AgentStreamReader> {
  const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
    method: 'POST',
    key: user.key,
    body: JSON.stringify({ message, preferred_agents: [agent] }),
  });
  expect(response.status).toBe(200);
  return new AgentStreamReader(response);
}

/** The result event of the turn's call of `tool`. */
const resultOf = (events: Json[], tool: string) =>
  events.find((event) => event.type === 'tool' && event.tool === tool && event.status === 'done');

/** The turn's answer text (its token events). */
const answerOf = (events: Json[]) =>
  events
    .filter((event) => event.type === 'token')
    .map((event) => event.text)
    .join('');

/** Runs a read tool through a turn: it runs at once (no approval), and its result is answered. */
async function read(user: User, agent: string, tool: string, args: unknown): Promise<Json> {
  const events = await (await send(user, agent, `Please look. ${callDirective(tool, args)}`)).rest();
  expect(events.some((event) => event.type === 'hitl_required')).toBe(false);
  const done = resultOf(events, tool);
  expect(done).toMatchObject({ ok: true });
  return done!.result as Json;
}

/** Runs a write tool through a turn, deciding its approval; the result event (ok or not) and the whole stream. */
async function write(
  user: User,
  agent: string,
  tool: string,
  args: unknown,
  approve: boolean,
): Promise<{ done: Json; events: Json[] }> {
  const reader = await send(user, agent, `Do it. ${callDirective(tool, args)}`);
  const required = await reader.until('hitl_required');
  expect(required).toMatchObject({ tool, arguments: args });
  const decision = await platform.agents(`/chat/approvals/${required.id}/${approve ? 'approve' : 'reject'}`, {
    method: 'POST',
    key: user.key,
  });
  expect(decision.status).toBe(200);
  const events = await reader.rest();
  expect(events.find((event) => event.type === 'hitl_resolved')).toMatchObject({ approved: approve });
  return { done: resultOf(events, tool)!, events };
}

describe('Google login against the simulated issuer', () => {
  it('logs in, keeps the tokens encrypted, and reports every workspace agent enabled', async () => {
    const user = await googleLogin();
    const { rows } = await database.query<Json>('select * from oauth_identities where user_id = $1', [user.userId]);
    expect(rows).toHaveLength(1);
    const identity = rows[0]!;
    expect(identity.refresh_token_encrypted).toMatch(/^v1\./);
    expect(identity.access_token_encrypted).toMatch(/^v1\./);
    expect(new TokenCipher(encryptionKey).decrypt(identity.access_token_encrypted)).toMatch(/^ya29\.sim-/);
    expect(identity.revoked_at).toBeNull();
    expect(await status(user)).toEqual({
      connected: true,
      email: user.email,
      scopes: expect.arrayContaining(['openid', gmailScope, tasksScope]),
      workspace_scopes_granted: true,
      missing_scopes: [],
      agents: allAgents,
    });
    // The same login over the session cookie.
    const viaCookie = await platform.agents('/auth/google/status', { cookie: user.cookie });
    expect(((await viaCookie.json()) as Json).agents).toEqual(allAgents);
  });

  it('enables only the agents whose scopes were granted; the others redirect to /auth/google', async () => {
    const user = await googleLogin(undefined, [gmailScope, tasksScope]);
    const granted = await status(user);
    expect(granted).toMatchObject({
      connected: true,
      workspace_scopes_granted: false,
      agents: { mail: true, tasks: true, calendar: false, drive: false, sheets: false, docs: false, contacts: false },
    });
    expect(granted.missing_scopes).toHaveLength(5);
    const refused = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({ message: 'What is on my calendar?', preferred_agents: ['calendar'] }),
    });
    expect(refused.status).toBe(302);
    expect(refused.headers.get('location')).toBe('/auth/google');
    expect(((await refused.json()) as Json).error.message).toMatch(/Google calendar.*\/auth\/google/);
    // The mail agent works; its contacts lookup needs a scope this login did not grant, and says so.
    expect((await read(user, 'mail', 'gmail_search', { query: 'invoice' })).messages).toHaveLength(1);
    const events = await (await send(user, 'mail', callDirective('contacts_search', { query: 'ana' }))).rest();
    expect(resultOf(events, 'contacts_search')).toMatchObject({
      ok: false,
      result: expect.stringMatching(/did not grant access to Google Contacts.*log in with Google again/),
    });
  });
});

describe('reads run at once on the seed data', () => {
  let user: User;
  let state: Json;
  const fileId = (name: string) => (state.files as Json[]).find((file) => file.name === name)!.id as string;

  beforeAll(async () => {
    user = await googleLogin();
    state = await googleState(user.email);
  });

  it('gmail_search and gmail_read', async () => {
    const found = await read(user, 'mail', 'gmail_search', { query: 'from:ana invoice' });
    expect(found.messages).toEqual([
      expect.objectContaining({
        from: 'Ana Silva <ana@example.com>',
        subject: 'Invoice 2041 is overdue',
        unread: true,
      }),
    ]);
    const message = await read(user, 'mail', 'gmail_read', { message_id: found.messages[0].id });
    expect(message).toMatchObject({ subject: 'Invoice 2041 is overdue', from: 'Ana Silva <ana@example.com>' });
    expect(message.body.text).toContain('1,250.00 EUR is now 10 days overdue');
    const newest = await read(user, 'mail', 'gmail_search', { max_results: 2 });
    expect(newest.messages.map((item: Json) => item.subject)).toEqual(['Lunch on Friday?', 'Offsite agenda']);
    const agenda = await read(user, 'mail', 'gmail_read', { message_id: newest.messages[1].id });
    expect(agenda.body.text).toContain('Day 1: strategy review');
    expect(agenda.attachments).toEqual([{ filename: 'agenda.txt', mime_type: 'text/plain', bytes: 12 }]);
    expect((await read(user, 'mail', 'gmail_search', { query: 'no-such-words-anywhere' })).messages).toEqual([]);
  });

  it('calendar_list and calendar_free_busy', async () => {
    const listed = await read(user, 'calendar', 'calendar_list', {
      time_min: '2026-12-01T00:00:00+01:00',
      time_max: '2026-12-03T00:00:00+01:00',
    });
    expect(listed.events.map((event: Json) => event.summary)).toEqual(['Team standup', 'Dentist', 'Project review']);
    expect(listed.events[2].attendees).toContainEqual({ email: 'ana@example.com', response: 'accepted' });
    const busy = await read(user, 'calendar', 'calendar_free_busy', {
      time_min: '2026-12-01T08:00:00+01:00',
      time_max: '2026-12-01T18:00:00+01:00',
    });
    expect(busy.calendars[0].busy).toEqual([
      { start: '2026-12-01T08:00:00.000Z', end: '2026-12-01T08:30:00.000Z' },
      { start: '2026-12-01T13:00:00.000Z', end: '2026-12-01T14:00:00.000Z' },
    ]);
    expect(busy.free).toHaveLength(3);
  });

  it('drive_search and drive_read of a PDF, a Doc, a Sheet and a text file', async () => {
    const found = await read(user, 'drive', 'drive_search', { query: 'report' });
    expect(found.files).toEqual([expect.objectContaining({ name: 'Quarterly report.pdf', kind: 'PDF' })]);
    const pdf = await read(user, 'drive', 'drive_read', { file_id: found.files[0].id });
    expect(pdf.text).toContain('Revenue grew 12 percent to 4.2 million EUR.');
    expect(pdf.text).toContain('[page 2]');
    const doc = await read(user, 'drive', 'drive_read', { file_id: fileId('Project proposal') });
    expect(doc).toMatchObject({
      file: { kind: 'Google Doc' },
      text: expect.stringContaining('Scope: a new customer portal'),
    });
    const sheet = await read(user, 'drive', 'drive_read', { file_id: fileId('Budget 2026') });
    expect(sheet.text).toBe('Category,Amount\nRent,1200\nFood,450\nTransport,120');
    const text = await read(user, 'drive', 'drive_read', { file_id: fileId('notes.txt'), offset: 5 });
    expect(text).toMatchObject({ offset: 5, text: 'the landlord about the heater.\nBuy stamps.\n' });
    const sheets = await read(user, 'drive', 'drive_search', { kind: 'spreadsheet' });
    expect(sheets.files.map((file: Json) => file.name)).toEqual(['Budget 2026']);
  });

  it('sheets_read and docs_read', async () => {
    const values = await read(user, 'sheets', 'sheets_read', { spreadsheet_id: fileId('Budget 2026') });
    expect(values).toMatchObject({
      spreadsheet: 'Budget 2026',
      sheets: ['Budget', 'Notes'],
      rows: [
        ['Category', 'Amount'],
        ['Rent', '1200'],
        ['Food', '450'],
        ['Transport', '120'],
      ],
    });
    const range = await read(user, 'sheets', 'sheets_read', {
      spreadsheet_id: fileId('Budget 2026'),
      range: 'Budget!B2:B3',
    });
    expect(range).toMatchObject({ range: 'Budget!B2:B3', rows: [['1200'], ['450']] });
    const document = await read(user, 'docs', 'docs_read', { document_id: fileId('Project proposal') });
    expect(document).toMatchObject({
      title: 'Project proposal',
      text: 'Project proposal\nScope: a new customer portal for Acme.\nTimeline: January to March 2027.\n',
    });
  });

  it('contacts_search and tasks_list', async () => {
    const contacts = await read(user, 'contacts', 'contacts_search', { query: 'maria' });
    expect(contacts.contacts).toEqual([
      {
        id: expect.stringMatching(/^people\/c\d+$/),
        name: 'Maria Lopez',
        emails: ['maria@acme.example', 'maria.lopez@example.com'],
        phones: [],
        organization: 'Acme',
      },
    ]);
    const open = await read(user, 'tasks', 'tasks_list', {});
    expect(open.lists.map((list: Json) => list.title)).toEqual(['My Tasks', 'Shopping']);
    expect(open.tasks.map((task: Json) => task.title)).toEqual(['Renew passport', 'Pay invoice 2041']);
    expect(open.tasks[0]).toMatchObject({ due: '2026-12-31', status: 'open' });
    const all = await read(user, 'tasks', 'tasks_list', { show_completed: true });
    expect(all.tasks).toHaveLength(3);
  });
});

describe('writes wait for approval: refused, nothing changes; approved, they happen once', () => {
  let user: User;
  let seeded: Json;
  const fileId = (name: string) => (seeded.files as Json[]).find((file) => file.name === name)!.id as string;
  const eventId = (summary: string) => (seeded.events as Json[]).find((event) => event.summary === summary)!.id;
  const taskId = (title: string) =>
    (seeded.task_lists[0].tasks as Json[]).find((task) => task.title === title)!.id as string;

  beforeAll(async () => {
    user = await googleLogin();
    seeded = await googleState(user.email);
  });

  interface WriteCase {
    agent: string;
    tool: string;
    args: () => Json;
    /** What the approved call changed at Google (the state before and after). */
    changed: (before: Json, after: Json) => void;
    /** The part of the state the call changes: equal before and after a refused call. */
    part: (state: Json) => unknown;
  }

  const sent = (state: Json) => (state.messages as Json[]).filter((message) => message.labels.includes('SENT'));
  const cases: WriteCase[] = [
    {
      agent: 'mail',
      tool: 'gmail_send',
      args: () => ({ to: ['ana@example.com'], subject: 'Invoice 2041', body: 'Paid this morning. Regards' }),
      part: sent,
      changed: (before, after) => {
        expect(sent(after)).toHaveLength(sent(before).length + 1);
        expect(sent(after).at(-1)).toMatchObject({
          headers: { to: 'ana@example.com', subject: 'Invoice 2041' },
          text: 'Paid this morning. Regards',
        });
      },
    },
    {
      agent: 'mail',
      tool: 'gmail_draft',
      args: () => ({ to: ['tom@example.org'], subject: 'Re: Lunch on Friday?', body: 'Yes, 12:30 works. Grüße' }),
      part: (state) => state.drafts,
      changed: (before, after) => {
        expect(after.drafts).toHaveLength(before.drafts.length + 1);
        const draft = (after.messages as Json[]).find((message) => message.id === after.drafts.at(-1).messageId)!;
        expect(draft).toMatchObject({ labels: ['DRAFT'], headers: { subject: 'Re: Lunch on Friday?' } });
        expect(draft.text).toBe('Yes, 12:30 works. Grüße');
      },
    },
    {
      agent: 'calendar',
      tool: 'calendar_create',
      args: () => ({
        summary: 'Planning',
        start: '2026-12-03T10:00:00+01:00',
        end: '2026-12-03T11:00:00+01:00',
        attendees: ['ana@example.com'],
        notify_attendees: true,
      }),
      part: (state) => state.events.length,
      changed: (before, after) => {
        expect(after.events).toHaveLength(before.events.length + 1);
        expect(after.events.at(-1)).toMatchObject({ summary: 'Planning', attendees: [{ email: 'ana@example.com' }] });
        expect(after.notifications.at(-1)).toMatchObject({ kind: 'created', to: ['ana@example.com'] });
      },
    },
    {
      agent: 'calendar',
      tool: 'calendar_update',
      args: () => ({
        event_id: eventId('Dentist'),
        start: '2026-12-04T09:00:00+01:00',
        end: '2026-12-04T10:00:00+01:00',
      }),
      part: (state) => (state.events as Json[]).find((event) => event.summary === 'Dentist'),
      changed: (_before, after) => {
        const event = (after.events as Json[]).find((candidate) => candidate.summary === 'Dentist')!;
        expect(event).toMatchObject({ start: { dateTime: '2026-12-04T09:00:00+01:00' }, sequence: 1 });
      },
    },
    {
      agent: 'calendar',
      tool: 'calendar_delete',
      args: () => ({ event_id: eventId('Team standup') }),
      part: (state) => (state.events as Json[]).find((event) => event.summary === 'Team standup')!.status,
      changed: (_before, after) => {
        expect((after.events as Json[]).find((event) => event.summary === 'Team standup')!.status).toBe('cancelled');
      },
    },
    {
      agent: 'drive',
      tool: 'drive_upload',
      args: () => ({ name: 'Summary.txt', content: 'Three files reviewed.\n' }),
      part: (state) => state.files.length,
      changed: (before, after) => {
        expect(after.files).toHaveLength(before.files.length + 1);
        expect(after.files.at(-1)).toMatchObject({
          name: 'Summary.txt',
          mimeType: 'text/plain',
          bytes: 22,
          appProperties: { tesseraCall: expect.stringMatching(/^[0-9a-f]{40}$/) },
        });
      },
    },
    {
      agent: 'sheets',
      tool: 'sheets_append',
      args: () => ({ spreadsheet_id: fileId('Budget 2026'), range: 'Budget', rows: [['Utilities', 90]] }),
      part: (state) => state.spreadsheets[fileId('Budget 2026')][0].values,
      changed: (_before, after) => {
        expect(after.spreadsheets[fileId('Budget 2026')][0].values.at(-1)).toEqual(['Utilities', '90']);
      },
    },
    {
      agent: 'sheets',
      tool: 'sheets_update',
      args: () => ({ spreadsheet_id: fileId('Budget 2026'), range: 'Budget!B2:B3', values: [[1250], ['=SUM(B2:B2)']] }),
      part: (state) => state.spreadsheets[fileId('Budget 2026')][0].values.slice(0, 3),
      changed: (_before, after) => {
        expect(after.spreadsheets[fileId('Budget 2026')][0].values.slice(1, 3)).toEqual([
          ['Rent', '1250'],
          ['Food', '1250'],
        ]);
      },
    },
    {
      agent: 'docs',
      tool: 'docs_create',
      args: () => ({ title: 'Meeting notes', text: 'Agenda\nBudget review\n' }),
      part: (state) => Object.keys(state.documents).length,
      changed: (before, after) => {
        const created = Object.keys(after.documents).filter((id) => !(id in before.documents));
        expect(created).toHaveLength(1);
        expect(after.documents[created[0]!]).toBe('Agenda\nBudget review\n\n');
        expect((after.files as Json[]).find((file) => file.id === created[0])).toMatchObject({ name: 'Meeting notes' });
      },
    },
    {
      agent: 'docs',
      tool: 'docs_append',
      args: () => ({ document_id: fileId('Project proposal'), text: '\nBudget: 40,000 EUR.' }),
      part: (state) => state.documents[fileId('Project proposal')],
      changed: (_before, after) => {
        expect(after.documents[fileId('Project proposal')]).toBe(
          'Project proposal\nScope: a new customer portal for Acme.\nTimeline: January to March 2027.\nBudget: 40,000 EUR.\n',
        );
      },
    },
    {
      agent: 'tasks',
      tool: 'tasks_add',
      args: () => ({ title: 'Call Ana about the invoice', due: '2026-12-05' }),
      part: (state) => state.task_lists[0].tasks.length,
      changed: (before, after) => {
        expect(after.task_lists[0].tasks).toHaveLength(before.task_lists[0].tasks.length + 1);
        expect(after.task_lists[0].tasks.at(-1)).toMatchObject({
          title: 'Call Ana about the invoice',
          due: '2026-12-05T00:00:00.000Z',
          status: 'needsAction',
        });
      },
    },
    {
      agent: 'tasks',
      tool: 'tasks_complete',
      args: () => ({ task_id: taskId('Renew passport') }),
      part: (state) => (state.task_lists[0].tasks as Json[]).find((task) => task.title === 'Renew passport')!.status,
      changed: (_before, after) => {
        const task = (after.task_lists[0].tasks as Json[]).find((candidate) => candidate.title === 'Renew passport');
        expect(task).toMatchObject({ status: 'completed', completed: expect.any(String) });
      },
    },
  ];

  it.each(cases.map((item) => [item.tool, item] as const))('%s', async (_name, item) => {
    const before = await googleState(user.email);
    const refused = await write(user, item.agent, item.tool, item.args(), false);
    expect(refused.done).toMatchObject({ ok: false, result: expect.stringContaining('did not approve') });
    const unchanged = await googleState(user.email);
    expect(item.part(unchanged)).toEqual(item.part(before));

    const approved = await write(user, item.agent, item.tool, item.args(), true);
    expect(approved.done).toMatchObject({ ok: true });
    const after = await googleState(user.email);
    item.changed(before, after);
  });

  it('runs a write once per call key, and a call that died midway is taken over without doing it twice', async () => {
    const other = await googleLogin();
    const { rows } = await database.query<{ refresh_token_encrypted: string }>(
      'select refresh_token_encrypted from oauth_identities where user_id = $1',
      [other.userId],
    );
    expect(rows).toHaveLength(1);
    const accounts = tokenStore(database);
    const service = new GoogleApi({
      accounts,
      writes: new WorkspaceWrites(database),
      apiBaseUrl: google.GOOGLE_API_BASE_URL,
      loginUrl: '/auth/google',
    });
    const context = (callKey: string) => ({
      conversationId: `conversation-${randomUUID()}`,
      userId: other.userId,
      callKey,
      services: { google: service },
      settings: {
        sandboxRoot: tmpdir(),
        sandboxQuotaBytes: 1_000_000,
        geocodingApiUrl: '',
        weatherApiUrl: '',
        braveSearchApiUrl: '',
        tavilyApiUrl: '',
        fetchAllowedHosts: [],
        google: { loginUrl: '/auth/google' },
      },
    });
    const send = JSON.stringify({ to: ['ana@example.com'], subject: 'Once', body: 'Only once.' });
    const first = await runTool(toolByName('gmail_send')!, send, context('turn-1:call-1'));
    const again = await runTool(toolByName('gmail_send')!, send, context('turn-1:call-1'));
    expect(first.ok).toBe(true);
    expect(again.ok).toBe(true);
    expect(JSON.parse(again.content)).toEqual(JSON.parse(first.content));
    const sentOnce = (await googleState(other.email)).messages.filter((message: Json) =>
      message.labels.includes('SENT'),
    );
    expect(sentOnce).toHaveLength(1);

    // A calendar_create whose process died after Google created the event: its claim is stale, the event exists.
    const callKey = `turn-2:call-${randomBytes(4).toString('hex')}`;
    const event = { summary: 'Taken over', start: '2026-12-07T10:00:00Z', end: '2026-12-07T11:00:00Z' };
    const token = await accounts.accessToken(other.userId);
    const direct = await fetch(`${google.GOOGLE_API_BASE_URL}/calendar/v3/calendars/primary/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: eventIdOf(callKey),
        summary: event.summary,
        start: { dateTime: event.start },
        end: { dateTime: event.end },
      }),
    });
    expect(direct.status).toBe(200);
    await database.query(
      `insert into workspace_writes (call_key, user_id, tool, result, claimed_at, done_at)
       values ($1, $2, 'calendar_create', null, now() - interval '10 minutes', null)`,
      [callKey, other.userId],
    );
    const takenOver = await runTool(toolByName('calendar_create')!, JSON.stringify(event), context(callKey));
    expect(takenOver.ok).toBe(true);
    expect(JSON.parse(takenOver.content)).toMatchObject({ created: true, event: { id: eventIdOf(callKey) } });
    const events = (await googleState(other.email)).events.filter((item: Json) => item.summary === 'Taken over');
    expect(events).toHaveLength(1);
    // A claim still in flight (not stale) is not run beside it: the call is told to try again.
    const busyKey = `turn-3:call-${randomBytes(4).toString('hex')}`;
    await database.query(
      `insert into workspace_writes (call_key, user_id, tool, result, claimed_at, done_at)
       values ($1, $2, 'tasks_add', null, now(), null)`,
      [busyKey, other.userId],
    );
    await expect(
      runTool(toolByName('tasks_add')!, JSON.stringify({ title: 'Never' }), context(busyKey)),
    ).rejects.toThrow(/already running/);
    expect((await googleState(other.email)).task_lists[0].tasks.some((task: Json) => task.title === 'Never')).toBe(
      false,
    );
  });
});

describe('tokens: refresh and revocation', () => {
  const storedAccessToken = async (user: User) =>
    (
      await database.query<{ access_token_encrypted: string | null }>(
        'select access_token_encrypted from oauth_identities where user_id = $1',
        [user.userId],
      )
    ).rows[0]!.access_token_encrypted;

  it('refreshes an access token Google rejects, once, and stores the new one encrypted', async () => {
    const user = await googleLogin();
    const before = await storedAccessToken(user);
    expect(await read(user, 'mail', 'gmail_search', { query: 'lunch' })).toMatchObject({
      messages: [expect.anything()],
    });
    expect((await googleState(user.email)).refresh_grants).toBe(0);

    const expired = await fetch(`${platform.simulatorUrl}/google/_accounts/${user.email}/expire`, { method: 'POST' });
    expect(((await expired.json()) as Json).expired).toBe(1);
    expect(await read(user, 'mail', 'gmail_search', { query: 'lunch' })).toMatchObject({
      messages: [expect.anything()],
    });
    const state = await googleState(user.email);
    expect(state.refresh_grants).toBe(1);
    expect(state.rejected_tokens).toBe(1);
    const after = await storedAccessToken(user);
    expect(after).toMatch(/^v1\./);
    expect(after).not.toBe(before);
  });

  it('refreshes an access token past its expiry before using it', async () => {
    const user = await googleLogin();
    // The clock passing the token's expiry, as an hour later.
    await database.query(
      `update oauth_identities set access_token_expires_at = now() - interval '1 second' where user_id = $1`,
      [user.userId],
    );
    expect((await read(user, 'tasks', 'tasks_list', {})).tasks).toHaveLength(2);
    const state = await googleState(user.email);
    expect(state).toMatchObject({ refresh_grants: 1, rejected_tokens: 0 });
  });

  it('two turns needing a refresh at once refresh once', async () => {
    const user = await googleLogin();
    await fetch(`${platform.simulatorUrl}/google/_accounts/${user.email}/expire`, { method: 'POST' });
    const turns = await Promise.all(
      ['invoice', 'lunch', 'offsite'].map(async (query) =>
        (await send(user, 'mail', callDirective('gmail_search', { query }))).rest(),
      ),
    );
    for (const events of turns) expect(resultOf(events, 'gmail_search')).toMatchObject({ ok: true });
    expect((await googleState(user.email)).refresh_grants).toBe(1);
  });

  it('callers refreshing one rejected token at once wait for the first refresh and use its token', async () => {
    const user = await googleLogin();
    const pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 8 });
    try {
      const accounts = tokenStore(pool);
      const rejected = await accounts.accessToken(user.userId);
      await fetch(`${platform.simulatorUrl}/google/_accounts/${user.email}/expire`, { method: 'POST' });
      // Six tools whose calls Google answered 401 at the same moment, each asking for a token other than that one.
      const tokens = await Promise.all(
        Array.from({ length: 6 }, () => accounts.accessToken(user.userId, { rejected })),
      );
      expect(new Set(tokens).size).toBe(1);
      expect(tokens[0]).not.toBe(rejected);
      expect((await googleState(user.email)).refresh_grants).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('a login Google revoked makes the agent ask for a new login instead of failing; a new login works', async () => {
    const user = await googleLogin();
    const { rows } = await database.query<{ refresh_token_encrypted: string }>(
      'select refresh_token_encrypted from oauth_identities where user_id = $1',
      [user.userId],
    );
    const refreshToken = new TokenCipher(encryptionKey).decrypt(rows[0]!.refresh_token_encrypted);
    // The user removes the app's access in their Google account: Google revokes the grant.
    const revoked = await fetch(`${google.GOOGLE_ISSUER}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken }).toString(),
    });
    expect(revoked.status).toBe(200);

    const events = await (
      await send(user, 'mail', `Any news? ${callDirective('gmail_search', { query: 'invoice' })}`)
    ).rest();
    expect(events.at(-1)).toMatchObject({ type: '[DONE]' });
    expect(events.some((event) => event.type === 'error')).toBe(false);
    expect(resultOf(events, 'gmail_search')).toMatchObject({
      ok: false,
      result: expect.stringContaining('the Google account must be connected again: log in with Google at /auth/google'),
    });
    expect(answerOf(events)).toContain('/auth/google');

    const identity = (await database.query<Json>('select * from oauth_identities where user_id = $1', [user.userId]))
      .rows[0]!;
    expect(identity).toMatchObject({ refresh_token_encrypted: null, access_token_encrypted: null });
    expect(identity.revoked_at).toBeInstanceOf(Date);
    expect(await status(user)).toMatchObject({
      connected: false,
      workspace_scopes_granted: false,
      agents: Object.fromEntries(Object.keys(allAgents).map((name) => [name, false])),
    });
    const redirected = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({ message: 'Check my inbox', preferred_agents: ['mail'] }),
    });
    expect(redirected.status).toBe(302);
    expect(redirected.headers.get('location')).toBe('/auth/google');

    const again = await googleLogin(user.email);
    expect(again.userId).toBe(user.userId);
    expect((await status(again)).connected).toBe(true);
    expect((await read(again, 'mail', 'gmail_search', { query: 'invoice' })).messages).toHaveLength(1);
  });
});
