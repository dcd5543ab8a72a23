/**
 * Gmail API v1, enough for the mail tools (`/google/gmail/v1/users/{me|address}/…`):
 * - `GET messages?q&maxResults&pageToken`: newest first, `{messages: [{id, threadId}], nextPageToken,
 *   resultSizeEstimate}` (no `messages` when none match). The search understands `from:` `to:` `subject:`
 *   `is:unread|read` `in:inbox|sent|drafts|anywhere` `label:` `has:attachment` `newer_than:Nd` `older_than:Nd`
 *   `after:` `before:` `rfc822msgid:`, quoted phrases and plain words (in the sender, recipients, subject and body);
 *   spam and trash are left out.
 * - `GET messages/{id}?format=full|metadata|minimal|raw&metadataHeaders=`: the `Message` resource, its payload a MIME
 *   tree with base64url bodies (text/plain, text/html in multipart/alternative, attachments in multipart/mixed).
 * - `POST messages/send {raw, threadId?}` and `POST drafts {message: {raw, threadId?}}`: the RFC 2822 message parsed
 *   (headers, RFC 2047 words, base64 and quoted-printable bodies, multipart), stored with label SENT or DRAFT.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import { newId, type Account, type MailMessage } from './accounts.ts';
import { badRequest, notFound, readJson } from './http.ts';

export async function gmail(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
): Promise<void> {
  const match = /^\/users\/([^/]+)(\/.*)$/.exec(path);
  if (!match) return notFound(response);
  const user = decodeURIComponent(match[1]!);
  if (user !== 'me' && user.toLowerCase() !== account.email) {
    return sendJson(response, 403, {
      error: { code: 403, message: 'Delegation denied for ' + account.email, status: 'PERMISSION_DENIED' },
    });
  }
  const rest = match[2]!;
  const route = `${request.method} ${rest}`;
  if (route === 'GET /messages') return list(response, account, url.searchParams);
  const get = /^GET \/messages\/([^/]+)$/.exec(route);
  if (get) return getMessage(response, account, decodeURIComponent(get[1]!), url.searchParams);
  if (route === 'POST /messages/send') {
    const body = await readJson(request);
    if (!body || typeof body.raw !== 'string')
      return badRequest(
        response,
        "'raw' RFC822 payload message string or uploading message via /upload/* URL required",
      );
    const message = store(account, body.raw, typeof body.threadId === 'string' ? body.threadId : undefined, ['SENT']);
    if (!message) return badRequest(response, 'Invalid To header');
    return sendJson(response, 200, { id: message.id, threadId: message.threadId, labelIds: message.labelIds });
  }
  if (route === 'POST /drafts') {
    const body = await readJson(request);
    const inner = body?.message as { raw?: unknown; threadId?: unknown } | undefined;
    if (!inner || typeof inner.raw !== 'string') return badRequest(response, 'Missing draft message');
    const message = store(account, inner.raw, typeof inner.threadId === 'string' ? inner.threadId : undefined, [
      'DRAFT',
    ]);
    if (!message) return badRequest(response, 'Invalid draft message');
    const id = newId(account, 'draft');
    account.drafts.push({ id, messageId: message.id });
    return sendJson(response, 200, {
      id,
      message: { id: message.id, threadId: message.threadId, labelIds: message.labelIds },
    });
  }
  if (route === 'GET /drafts') {
    return sendJson(response, 200, {
      drafts: account.drafts.map((draft) => ({
        id: draft.id,
        message: { id: draft.messageId, threadId: account.messages.find((m) => m.id === draft.messageId)?.threadId },
      })),
      resultSizeEstimate: account.drafts.length,
    });
  }
  return notFound(response);
}

function list(response: ServerResponse, account: Account, parameters: URLSearchParams): void {
  const maxResults = Math.min(Math.max(Number(parameters.get('maxResults') ?? 100) || 100, 1), 500);
  const offset = Number(parameters.get('pageToken') ?? 0) || 0;
  const matches = search(account.messages, parameters.get('q') ?? '', parameters.getAll('labelIds')).sort(
    (a, b) => b.internalDate - a.internalDate,
  );
  const page = matches.slice(offset, offset + maxResults);
  sendJson(response, 200, {
    ...(page.length ? { messages: page.map((message) => ({ id: message.id, threadId: message.threadId })) } : {}),
    ...(offset + maxResults < matches.length ? { nextPageToken: String(offset + maxResults) } : {}),
    resultSizeEstimate: matches.length,
  });
}

function getMessage(response: ServerResponse, account: Account, id: string, parameters: URLSearchParams): void {
  const message = account.messages.find((candidate) => candidate.id === id);
  if (!message) return notFound(response);
  const format = parameters.get('format') ?? 'full';
  const base = {
    id: message.id,
    threadId: message.threadId,
    labelIds: message.labelIds,
    snippet: snippet(message.text),
    sizeEstimate: Buffer.byteLength(message.text) + 500,
    historyId: String(100000 + account.messages.indexOf(message)),
    internalDate: String(message.internalDate),
  };
  if (format === 'minimal') return sendJson(response, 200, base);
  if (format === 'raw')
    return sendJson(response, 200, { ...base, raw: Buffer.from(rawOf(message)).toString('base64url') });
  const wanted = parameters.getAll('metadataHeaders').map((name) => name.toLowerCase());
  if (format === 'metadata') {
    const headers = wanted.length
      ? message.headers.filter((header) => wanted.includes(header.name.toLowerCase()))
      : message.headers;
    return sendJson(response, 200, { ...base, payload: { mimeType: topType(message), headers } });
  }
  sendJson(response, 200, { ...base, payload: payloadOf(message) });
}

const snippet = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 200);

function topType(message: MailMessage): string {
  if (message.attachments.length) return 'multipart/mixed';
  return message.html ? 'multipart/alternative' : 'text/plain';
}

function payloadOf(message: MailMessage) {
  const part = (partId: string, mimeType: string, data: Buffer, filename = '') => ({
    partId,
    mimeType,
    filename,
    headers: [{ name: 'Content-Type', value: `${mimeType}${filename ? `; name="${filename}"` : '; charset="UTF-8"'}` }],
    body: filename
      ? { attachmentId: `att-${message.id}-${partId}`, size: data.length }
      : { size: data.length, data: data.toString('base64url') },
  });
  const text = part('0', 'text/plain', Buffer.from(message.text));
  const alternative = message.html
    ? {
        partId: '0',
        mimeType: 'multipart/alternative',
        filename: '',
        headers: [{ name: 'Content-Type', value: 'multipart/alternative; boundary="sim-alt"' }],
        body: { size: 0 },
        parts: [{ ...text, partId: '0.0' }, part('0.1', 'text/html', Buffer.from(message.html))],
      }
    : text;
  if (!message.attachments.length) {
    return { ...alternative, partId: '', headers: [...message.headers, ...alternative.headers] };
  }
  return {
    partId: '',
    mimeType: 'multipart/mixed',
    filename: '',
    headers: [...message.headers, { name: 'Content-Type', value: 'multipart/mixed; boundary="sim-mixed"' }],
    body: { size: 0 },
    parts: [
      alternative,
      ...message.attachments.map((attachment, index) =>
        part(String(index + 1), attachment.mimeType, attachment.data, attachment.filename),
      ),
    ],
  };
}

function rawOf(message: MailMessage): string {
  const headers = message.headers.map((header) => `${header.name}: ${header.value}`).join('\r\n');
  return `${headers}\r\nContent-Type: text/plain; charset="UTF-8"\r\n\r\n${message.text}`;
}

function headerOf(message: MailMessage, name: string): string {
  return message.headers.find((header) => header.name.toLowerCase() === name)?.value ?? '';
}

/** Stores a message sent or drafted from its base64url RFC 2822 form; undefined when it has no recipient. */
function store(account: Account, raw: string, threadId: string | undefined, labels: string[]): MailMessage | undefined {
  const parsed = parseMime(Buffer.from(raw, 'base64url').toString('latin1'));
  const to = parsed.headers.find((header) => header.name.toLowerCase() === 'to');
  if (labels.includes('SENT') && !to?.value.includes('@')) return undefined;
  const id = newId(account, 'message');
  const headers = parsed.headers.filter(
    (header) => !['from', 'message-id', 'date'].includes(header.name.toLowerCase()),
  );
  const now = Date.now();
  const message: MailMessage = {
    id,
    threadId: threadId && account.messages.some((other) => other.threadId === threadId) ? threadId : id,
    labelIds: labels,
    internalDate: now,
    headers: [
      { name: 'From', value: `${account.name} <${account.email}>` },
      ...headers,
      { name: 'Date', value: new Date(now).toUTCString().replace('GMT', '+0000') },
      // Gmail gives a sent message its own Message-ID.
      { name: 'Message-ID', value: `<${id}@mail.gmail.com>` },
    ],
    text: parsed.text,
    ...(parsed.html ? { html: parsed.html } : {}),
    attachments: parsed.attachments,
  };
  account.messages.push(message);
  return message;
}

interface ParsedMime {
  headers: Array<{ name: string; value: string }>;
  text: string;
  html?: string;
  attachments: MailMessage['attachments'];
}

/** A MIME message (as bytes in latin1): headers unfolded and RFC 2047-decoded, the text and HTML, attachments. */
export function parseMime(source: string): ParsedMime {
  const { headers, body } = splitHeaders(source);
  const result: ParsedMime = { headers, text: '', attachments: [] };
  collect(headers, body, result);
  return result;
}

function splitHeaders(source: string): { headers: ParsedMime['headers']; body: string } {
  const split = source.search(/\r?\n\r?\n/);
  const head = split < 0 ? source : source.slice(0, split);
  const body = split < 0 ? '' : source.slice(split).replace(/^\r?\n\r?\n/, '');
  const headers = head
    .replace(/\r?\n[ \t]+/g, ' ')
    .split(/\r?\n/)
    .filter((line) => line.includes(':'))
    .map((line) => {
      const index = line.indexOf(':');
      return { name: line.slice(0, index).trim(), value: decodeWords(line.slice(index + 1).trim()) };
    });
  return { headers, body };
}

function collect(headers: ParsedMime['headers'], body: string, result: ParsedMime): void {
  const type = headers.find((header) => header.name.toLowerCase() === 'content-type')?.value ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    for (const section of body.split(`--${boundary}`).slice(1)) {
      if (section.startsWith('--')) break;
      const part = splitHeaders(section.replace(/^\r?\n/, ''));
      collect(part.headers, part.body.replace(/\r?\n$/, ''), result);
    }
    return;
  }
  const encoding = headers.find((header) => header.name.toLowerCase() === 'content-transfer-encoding')?.value;
  const bytes = decodeBody(body, encoding);
  const disposition = headers.find((header) => header.name.toLowerCase() === 'content-disposition')?.value ?? '';
  const filename = /filename="?([^";]+)"?/i.exec(disposition)?.[1] ?? /name="?([^";]+)"?/i.exec(type)?.[1];
  if (filename || /attachment/i.test(disposition)) {
    result.attachments.push({ filename: filename ?? 'attachment', mimeType: type.split(';')[0]!.trim(), data: bytes });
  } else if (/^text\/html/i.test(type)) {
    result.html = (result.html ?? '') + bytes.toString('utf8');
  } else {
    result.text += bytes.toString('utf8');
  }
}

function decodeBody(body: string, encoding: string | undefined): Buffer {
  switch ((encoding ?? '').toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64');
    case 'quoted-printable':
      return Buffer.from(
        body
          .replace(/=\r?\n/g, '')
          .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
        'latin1',
      );
    default:
      return Buffer.from(body.replace(/\r?\n$/, ''), 'latin1');
  }
}

/** RFC 2047 encoded words (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`) in a header value. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([BQ])\?([^?]*)\?=/gi, (_, charset: string, kind: string, text: string) => {
      const bytes =
        kind.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64')
          : Buffer.from(
              text
                .replace(/_/g, ' ')
                .replace(/=([0-9A-F]{2})/gi, (__, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
              'latin1',
            );
      return new TextDecoder(charset.toLowerCase() === 'utf-8' ? 'utf-8' : 'latin1').decode(bytes);
    });
}

/** Gmail's search, for what the simulated mailbox holds (see the file comment). */
function search(messages: MailMessage[], query: string, labelIds: string[]): MailMessage[] {
  const terms = query.match(/(-?\w+:"[^"]*"|-?\w+:\S+|"[^"]*"|\S+)/g) ?? [];
  let where: 'default' | 'anywhere' | string = 'default';
  const tests: Array<(message: MailMessage) => boolean> = [];
  const lower = (text: string) => text.toLowerCase();
  const everything = (message: MailMessage) =>
    lower(
      [
        headerOf(message, 'from'),
        headerOf(message, 'to'),
        headerOf(message, 'cc'),
        headerOf(message, 'subject'),
        message.text,
      ].join(' '),
    );
  const day = 86_400_000;
  for (const raw of terms) {
    const negated = raw.startsWith('-');
    const term = negated ? raw.slice(1) : raw;
    const operator = /^(\w+):(.*)$/.exec(term);
    const value = lower((operator?.[2] ?? term).replace(/^"|"$/g, ''));
    let test: (message: MailMessage) => boolean;
    switch (operator?.[1]?.toLowerCase()) {
      case 'from':
      case 'to':
      case 'cc':
      case 'subject':
        test = (message) => lower(headerOf(message, operator![1]!.toLowerCase())).includes(value);
        break;
      case 'is':
        test =
          value === 'unread'
            ? (message) => message.labelIds.includes('UNREAD')
            : value === 'read'
              ? (message) => !message.labelIds.includes('UNREAD')
              : value === 'starred'
                ? (message) => message.labelIds.includes('STARRED')
                : () => false;
        break;
      case 'in':
        if (value === 'anywhere') {
          where = 'anywhere';
          continue;
        }
        test = (message) => message.labelIds.includes(value.toUpperCase());
        if (value === 'drafts') test = (message) => message.labelIds.includes('DRAFT');
        break;
      case 'label':
        test = (message) => message.labelIds.some((label) => lower(label) === value);
        break;
      case 'has':
        test = value === 'attachment' ? (message) => message.attachments.length > 0 : () => false;
        break;
      case 'newer_than':
      case 'older_than': {
        const amount = Number.parseInt(value, 10);
        const unit = value.endsWith('m') ? 30 * day : value.endsWith('y') ? 365 * day : day;
        const limit = Date.now() - amount * unit;
        test =
          operator![1] === 'newer_than'
            ? (message) => message.internalDate >= limit
            : (message) => message.internalDate < limit;
        break;
      }
      case 'after':
      case 'before': {
        const at = Date.parse(value.replace(/\//g, '-'));
        test =
          operator![1] === 'after' ? (message) => message.internalDate >= at : (message) => message.internalDate < at;
        break;
      }
      case 'rfc822msgid':
        test = (message) => lower(headerOf(message, 'message-id')).replace(/[<>]/g, '') === value.replace(/[<>]/g, '');
        break;
      default:
        test = (message) => everything(message).includes(value);
    }
    tests.push(negated ? (message) => !test(message) : test);
  }
  return messages.filter((message) => {
    if (where === 'default' && message.labelIds.some((label) => label === 'SPAM' || label === 'TRASH')) return false;
    if (labelIds.length && !labelIds.every((label) => message.labelIds.includes(label))) return false;
    return tests.every((test) => test(message));
  });
}
