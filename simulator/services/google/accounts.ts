/**
 * The simulated Google accounts: one per e-mail address, created at its first login with the same seed data every
 * time (a few mails, events, Drive files including a Doc, a Sheet and a PDF, contacts and tasks), so what the tools
 * read is known in advance. Ids are derived from the address and a counter: deterministic for a given sequence of
 * calls. State lives in memory for the process's lifetime (as the messaging platforms' sent logs do).
 */
import { createHash } from 'node:crypto';

export interface MailMessage {
  id: string;
  threadId: string;
  labelIds: string[];
  /** Milliseconds since the epoch. */
  internalDate: number;
  headers: Array<{ name: string; value: string }>;
  text: string;
  html?: string;
  attachments: Array<{ filename: string; mimeType: string; data: Buffer }>;
}

export interface EventTime {
  date?: string;
  dateTime?: string;
  timeZone?: string;
}

export interface CalendarEvent {
  id: string;
  status: 'confirmed' | 'cancelled';
  summary?: string;
  description?: string;
  location?: string;
  start: EventTime;
  end: EventTime;
  attendees?: Array<{ email: string; responseStatus: string }>;
  transparency?: 'opaque' | 'transparent';
  created: string;
  updated: string;
  sequence: number;
}

export interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  createdTime: string;
  modifiedTime: string;
  parents: string[];
  appProperties: Record<string, string>;
  trashed: boolean;
  /** The bytes of a binary or text file (not of a Docs Editors file, whose content lives with the Doc or Sheet). */
  content?: Buffer;
  /** What a full-text search finds in a binary file (a PDF's text layer). */
  indexedText?: string;
}

export type Cell = string | number | boolean;

export interface Spreadsheet {
  sheets: Array<{ sheetId: number; title: string; cells: Cell[][] }>;
}

export interface Document {
  revision: number;
  /** The body's text; always ends with the final newline, as a Google Doc's body does. */
  text: string;
}

export interface Person {
  resourceName: string;
  names: Array<{ displayName: string; givenName?: string; familyName?: string }>;
  emailAddresses: Array<{ value: string; type?: string }>;
  phoneNumbers: Array<{ value: string; type?: string }>;
  organizations: Array<{ name: string; title?: string }>;
}

export interface Task {
  id: string;
  title: string;
  notes?: string;
  status: 'needsAction' | 'completed';
  due?: string;
  completed?: string;
  updated: string;
  position: string;
}

export interface TaskList {
  id: string;
  title: string;
  updated: string;
  tasks: Task[];
}

export interface Account {
  email: string;
  /** Google's account id (21 digits), the ID token's `sub`. */
  sub: string;
  name: string;
  counter: number;
  messages: MailMessage[];
  drafts: Array<{ id: string; messageId: string }>;
  events: CalendarEvent[];
  /** Invitations and updates Calendar sent because the call asked (`sendUpdates=all`). */
  notifications: Array<{ eventId: string; kind: 'created' | 'updated' | 'deleted'; to: string[] }>;
  files: DriveFile[];
  spreadsheets: Map<string, Spreadsheet>;
  documents: Map<string, Document>;
  people: Person[];
  taskLists: TaskList[];
  /** What tests check: token refreshes granted, and requests refused for an expired or revoked token. */
  stats: { refreshGrants: number; rejectedTokens: number; apiCalls: number };
}

const accounts = new Map<string, Account>();

export function findAccount(email: string): Account | undefined {
  return accounts.get(email.toLowerCase());
}

/** The account of an address, created with its seed data on first use. */
export function accountOf(email: string): Account {
  const key = email.toLowerCase();
  let account = accounts.get(key);
  if (!account) {
    account = seed(key);
    accounts.set(key, account);
  }
  return account;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** A new id for the account: `kind` decides its shape, as Google's ids differ by API. */
export function newId(
  account: Account,
  kind: 'message' | 'event' | 'file' | 'document' | 'task' | 'list' | 'draft' | 'person',
): string {
  account.counter += 1;
  const hash = digest(`${account.email}:${kind}:${account.counter}`);
  switch (kind) {
    case 'message':
      return hash.toString('hex').slice(0, 16);
    case 'draft':
      return `r${BigInt(`0x${hash.toString('hex').slice(0, 15)}`).toString()}`;
    case 'event':
      return BigInt(`0x${hash.toString('hex')}`)
        .toString(32)
        .slice(0, 26);
    case 'file':
      return `1${hash.toString('base64url').slice(0, 32)}`;
    case 'document':
      return `1${hash.toString('base64url').slice(0, 43)}`;
    case 'task':
    case 'list':
      return hash.toString('base64url').slice(0, 22);
    case 'person':
      return `people/c${BigInt(`0x${hash.toString('hex').slice(0, 15)}`).toString()}`;
  }
}

function seed(email: string): Account {
  const local = email.split('@')[0] ?? email;
  const name = local.replace(/[._-]+/g, ' ').replace(/\b\w/g, (letter) => letter.toUpperCase());
  const account: Account = {
    email,
    sub: `1${BigInt(`0x${digest(`sub:${email}`).toString('hex').slice(0, 16)}`)
      .toString()
      .padStart(20, '0')
      .slice(0, 20)}`,
    name,
    counter: 0,
    messages: [],
    drafts: [],
    events: [],
    notifications: [],
    files: [],
    spreadsheets: new Map(),
    documents: new Map(),
    people: [],
    taskLists: [],
    stats: { refreshGrants: 0, rejectedTokens: 0, apiCalls: 0 },
  };
  const mail = (from: string, subject: string, at: string, text: string, options: Partial<MailMessage> = {}) => {
    const id = newId(account, 'message');
    account.messages.push({
      id,
      threadId: id,
      labelIds: ['INBOX', 'UNREAD', 'CATEGORY_PERSONAL'],
      internalDate: Date.parse(at),
      headers: [
        { name: 'From', value: from },
        { name: 'To', value: `${name} <${email}>` },
        { name: 'Subject', value: subject },
        { name: 'Date', value: new Date(at).toUTCString().replace('GMT', '+0000') },
        { name: 'Message-ID', value: `<${id}@mail.example.com>` },
      ],
      text,
      attachments: [],
      ...options,
    });
  };
  mail(
    'Ana Silva <ana@example.com>',
    'Invoice 2041 is overdue',
    '2026-11-20T09:15:00Z',
    'Hi,\n\ninvoice 2041 for 1,250.00 EUR is now 10 days overdue. Could you check with your accounts team?\n\nThanks,\nAna',
  );
  mail(
    'Team Calendar <calendar@example.com>',
    'Offsite agenda',
    '2026-11-22T14:00:00Z',
    'Offsite agenda\n\nDay 1: strategy review, 9:00-12:00\nDay 2: team workshops\n',
    {
      html: '<h1>Offsite agenda</h1><p>Day 1: <b>strategy review</b>, 9:00-12:00</p><p>Day 2: team workshops</p>',
      labelIds: ['INBOX', 'CATEGORY_UPDATES'],
      attachments: [{ filename: 'agenda.txt', mimeType: 'text/plain', data: Buffer.from('Day 1\nDay 2\n') }],
    },
  );
  mail(
    'Tom Becker <tom@example.org>',
    'Lunch on Friday?',
    '2026-11-24T11:30:00Z',
    'Hey, are you free for lunch on Friday at 12:30? The usual place.\nTom',
  );

  const event = (summary: string, start: string, end: string, extra: Partial<CalendarEvent> = {}) => {
    const created = '2026-11-01T08:00:00.000Z';
    account.events.push({
      id: newId(account, 'event'),
      status: 'confirmed',
      summary,
      start: { dateTime: start, timeZone: 'Europe/Berlin' },
      end: { dateTime: end, timeZone: 'Europe/Berlin' },
      created,
      updated: created,
      sequence: 0,
      ...extra,
    });
  };
  event('Team standup', '2026-12-01T09:00:00+01:00', '2026-12-01T09:30:00+01:00', { location: 'Room 4' });
  event('Dentist', '2026-12-01T14:00:00+01:00', '2026-12-01T15:00:00+01:00');
  event('Project review', '2026-12-02T10:00:00+01:00', '2026-12-02T11:30:00+01:00', {
    attendees: [
      { email: 'ana@example.com', responseStatus: 'accepted' },
      { email: 'tom@example.org', responseStatus: 'needsAction' },
    ],
  });

  const created = '2026-10-15T10:00:00.000Z';
  const file = (name: string, mimeType: string, extra: Partial<DriveFile> = {}, kind: 'file' | 'document' = 'file') => {
    const entry: DriveFile = {
      id: newId(account, kind),
      name,
      mimeType,
      createdTime: created,
      modifiedTime: created,
      parents: ['root'],
      appProperties: {},
      trashed: false,
      ...extra,
    };
    account.files.push(entry);
    return entry;
  };
  const budget = file('Budget 2026', 'application/vnd.google-apps.spreadsheet', {}, 'document');
  account.spreadsheets.set(budget.id, {
    sheets: [
      {
        sheetId: 0,
        title: 'Budget',
        cells: [
          ['Category', 'Amount'],
          ['Rent', 1200],
          ['Food', 450],
          ['Transport', 120],
        ],
      },
      { sheetId: 1, title: 'Notes', cells: [['Reviewed monthly']] },
    ],
  });
  const proposal = file('Project proposal', 'application/vnd.google-apps.document', {}, 'document');
  account.documents.set(proposal.id, {
    revision: 1,
    text: 'Project proposal\nScope: a new customer portal for Acme.\nTimeline: January to March 2027.\n',
  });
  const reportPages = [
    ['Quarterly report Q3 2026', 'Revenue grew 12 percent to 4.2 million EUR.'],
    ['Outlook', 'We expect steady growth in Q4.'],
  ];
  file('Quarterly report.pdf', 'application/pdf', {
    content: simplePdf(reportPages),
    indexedText: reportPages.flat().join('\n'),
  });
  file('notes.txt', 'text/plain', { content: Buffer.from('Call the landlord about the heater.\nBuy stamps.\n') });

  const person = (displayName: string, emails: string[], phones: string[], organization?: string) => {
    const [givenName, ...rest] = displayName.split(' ');
    account.people.push({
      resourceName: newId(account, 'person'),
      names: [{ displayName, givenName: givenName ?? displayName, familyName: rest.join(' ') }],
      emailAddresses: emails.map((value) => ({ value, type: 'work' })),
      phoneNumbers: phones.map((value) => ({ value, type: 'mobile' })),
      organizations: organization ? [{ name: organization }] : [],
    });
  };
  person('Ana Silva', ['ana@example.com'], ['+49 30 1234567'], 'Silva Consulting');
  person('Tom Becker', ['tom@example.org'], ['+49 151 2345678']);
  person('Maria Lopez', ['maria@acme.example', 'maria.lopez@example.com'], [], 'Acme');

  const updated = '2026-11-01T08:00:00.000Z';
  account.taskLists.push({
    id: newId(account, 'list'),
    title: 'My Tasks',
    updated,
    tasks: [
      {
        id: newId(account, 'task'),
        title: 'Renew passport',
        due: '2026-12-31T00:00:00.000Z',
        status: 'needsAction',
        updated,
        position: '00000000000000000000',
      },
      {
        id: newId(account, 'task'),
        title: 'Pay invoice 2041',
        notes: '1,250.00 EUR to Silva Consulting',
        status: 'needsAction',
        updated,
        position: '00000000000000000001',
      },
      {
        id: newId(account, 'task'),
        title: 'Book flights',
        status: 'completed',
        completed: '2026-11-10T12:00:00.000Z',
        updated,
        position: '00000000000000000002',
      },
    ],
  });
  account.taskLists.push({ id: newId(account, 'list'), title: 'Shopping', updated, tasks: [] });
  return account;
}

/**
 * A PDF with a text layer, one page per entry (its lines in Helvetica), built with its cross-reference table: what
 * a file in Drive holds when the tests read a PDF's text.
 */
export function simplePdf(pages: string[][]): Buffer {
  const escape = (text: string) => text.replace(/[\\()]/g, (character) => `\\${character}`);
  const objects: string[] = [];
  const pageObjects = pages.map((_, index) => 4 + index * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageObjects.map((number) => `${number} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';
  pages.forEach((lines, index) => {
    const pageNumber = 4 + index * 2;
    const stream = `BT /F1 14 Tf 72 720 Td ${lines.map((line, lineIndex) => `${lineIndex ? '0 -20 Td ' : ''}(${escape(line)}) Tj`).join(' ')} ET`;
    objects[pageNumber] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageNumber + 1} 0 R >>`;
    objects[pageNumber + 1] = `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`;
  });
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let number = 1; number < objects.length; number++) {
    offsets[number] = Buffer.byteLength(body, 'latin1');
    body += `${number} 0 obj\n${objects[number]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let number = 1; number < objects.length; number++)
    body += `${String(offsets[number]).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}
