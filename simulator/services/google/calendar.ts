/**
 * Google Calendar API v3, enough for the calendar tools (`/google/calendar/v3/…`; one calendar per account, `primary`
 * or the account's address, in time zone UTC):
 * - `GET calendars/{id}/events?timeMin&timeMax&q&singleEvents&orderBy=startTime&maxResults&pageToken`: events ending
 *   after timeMin and starting before timeMax, deleted ones left out.
 * - `POST calendars/{id}/events?sendUpdates`: a client-chosen `id` must be base32hex (5-1024 characters, 0-9 a-v),
 *   and an id that exists answers 409 `duplicate`; a range whose end is not after its start 400 `timeRangeEmpty`.
 * - `GET|PATCH|DELETE calendars/{id}/events/{eventId}`: 404 for an unknown event, 410 `deleted` for one deleted.
 * - `POST freeBusy {timeMin, timeMax, items: [{id}]}`: each calendar's busy intervals (overlaps merged), an unknown
 *   calendar with `errors: [{reason: notFound}]`.
 * `sendUpdates=all` records what Google would have mailed the guests (`notifications`, for tests).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import { newId, type Account, type CalendarEvent, type EventTime } from './accounts.ts';
import { badRequest, googleError, notFound, readJson } from './http.ts';

const eventIdPattern = /^[a-v0-9]{5,1024}$/;

export async function calendar(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
): Promise<void> {
  if (request.method === 'POST' && path === '/freeBusy') return freeBusy(request, response, account);
  const match = /^\/calendars\/([^/]+)\/events(?:\/([^/]+))?$/.exec(path);
  if (!match) return notFound(response, 'Not Found');
  const calendarId = decodeURIComponent(match[1]!);
  if (calendarId !== 'primary' && calendarId.toLowerCase() !== account.email) return notFound(response, 'Not Found');
  const eventId = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
  const parameters = url.searchParams;
  if (eventId === undefined) {
    if (request.method === 'GET') return list(response, account, parameters);
    if (request.method === 'POST') return insert(request, response, account, parameters);
    return notFound(response);
  }
  const event = account.events.find((candidate) => candidate.id === eventId);
  if (!event) return notFound(response, 'Not Found');
  if (request.method === 'GET') return sendJson(response, 200, present(account, event));
  if (event.status === 'cancelled') return googleError(response, 410, 'Resource has been deleted');
  if (request.method === 'PATCH' || request.method === 'PUT') {
    const body = await readJson(request);
    if (!body) return badRequest(response, 'Invalid JSON payload received.');
    const changed = apply(event, body);
    if (typeof changed === 'string') return badRequest(response, changed);
    event.sequence += 1;
    event.updated = new Date().toISOString();
    notify(account, event, 'updated', parameters);
    return sendJson(response, 200, present(account, event));
  }
  if (request.method === 'DELETE') {
    event.status = 'cancelled';
    event.updated = new Date().toISOString();
    notify(account, event, 'deleted', parameters);
    response.writeHead(204);
    response.end();
    return;
  }
  return notFound(response);
}

/** An event time as an instant (all-day dates at midnight UTC, the simulated calendar's zone). */
export function instant(time: EventTime | undefined): number {
  if (!time) return Number.NaN;
  if (time.date) return Date.parse(`${time.date}T00:00:00Z`);
  const value = time.dateTime ?? '';
  if (/(Z|[+-]\d{2}:\d{2})$/.test(value)) return Date.parse(value);
  return zonedInstant(value, time.timeZone ?? 'UTC');
}

/** A local date-time in an IANA zone as an instant (the zone's offset at that moment, found by Intl). */
function zonedInstant(local: string, timeZone: string): number {
  const asUtc = Date.parse(`${local}Z`);
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
  } catch {
    return Number.NaN;
  }
  const offsetAt = (at: number) => {
    const parts = Object.fromEntries(formatter.formatToParts(new Date(at)).map((part) => [part.type, part.value]));
    const shown = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
    return shown - at;
  };
  const guess = asUtc - offsetAt(asUtc);
  return asUtc - offsetAt(guess);
}

function list(response: ServerResponse, account: Account, parameters: URLSearchParams): void {
  const from = parameters.get('timeMin') ? Date.parse(parameters.get('timeMin')!) : -Infinity;
  const until = parameters.get('timeMax') ? Date.parse(parameters.get('timeMax')!) : Infinity;
  if (Number.isNaN(from) || Number.isNaN(until)) return badRequest(response, 'Bad Request');
  if (parameters.get('orderBy') === 'startTime' && parameters.get('singleEvents') !== 'true') {
    return badRequest(response, 'The requested ordering is not available for the particular query.');
  }
  const query = (parameters.get('q') ?? '').toLowerCase();
  const maxResults = Math.min(Math.max(Number(parameters.get('maxResults') ?? 250) || 250, 1), 2500);
  const offset = Number(parameters.get('pageToken') ?? 0) || 0;
  const matches = account.events
    .filter((event) => event.status !== 'cancelled')
    .filter((event) => instant(event.end) > from && instant(event.start) < until)
    .filter(
      (event) =>
        !query ||
        [event.summary, event.description, event.location, ...(event.attendees ?? []).map((person) => person.email)]
          .join(' ')
          .toLowerCase()
          .includes(query),
    )
    .sort((a, b) => instant(a.start) - instant(b.start));
  const page = matches.slice(offset, offset + maxResults);
  sendJson(response, 200, {
    kind: 'calendar#events',
    etag: `"${account.counter}"`,
    summary: account.email,
    updated: new Date().toISOString(),
    timeZone: 'UTC',
    accessRole: 'owner',
    items: page.map((event) => present(account, event)),
    ...(offset + maxResults < matches.length ? { nextPageToken: String(offset + maxResults) } : {}),
  });
}

async function insert(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  parameters: URLSearchParams,
): Promise<void> {
  const body = await readJson(request);
  if (!body) return badRequest(response, 'Invalid JSON payload received.');
  if (body.id !== undefined) {
    if (typeof body.id !== 'string' || !eventIdPattern.test(body.id)) {
      return badRequest(response, 'Invalid resource id value.');
    }
    if (account.events.some((event) => event.id === body.id)) {
      return googleError(response, 409, 'The requested identifier already exists.', { reason: 'duplicate' });
    }
  }
  if (!body.start) return badRequest(response, 'Missing start time.');
  if (!body.end) return badRequest(response, 'Missing end time.');
  const now = new Date().toISOString();
  const event: CalendarEvent = {
    id: typeof body.id === 'string' ? body.id : newId(account, 'event'),
    status: 'confirmed',
    start: {},
    end: {},
    created: now,
    updated: now,
    sequence: 0,
  };
  const problem = apply(event, body);
  if (typeof problem === 'string') return badRequest(response, problem);
  account.events.push(event);
  notify(account, event, 'created', parameters);
  sendJson(response, 200, present(account, event));
}

/** Applies the writable fields of a body to an event; a message when they are invalid (nothing applied then). */
function apply(event: CalendarEvent, body: Record<string, unknown>): string | true {
  const next: CalendarEvent = { ...event };
  for (const field of ['summary', 'description', 'location'] as const) {
    if (body[field] !== undefined) {
      if (typeof body[field] !== 'string') return `Invalid value for: ${field}`;
      next[field] = body[field];
    }
  }
  for (const field of ['start', 'end'] as const) {
    if (body[field] === undefined) continue;
    const time = body[field] as EventTime;
    if (typeof time !== 'object' || time === null || (!time.date && !time.dateTime)) return 'Missing time.';
    if (time.dateTime && !/(Z|[+-]\d{2}:\d{2})$/.test(time.dateTime) && !time.timeZone) {
      return 'Missing time zone definition for start time.';
    }
    if (Number.isNaN(instant(time))) return 'Invalid value for: ' + field;
    next[field] = {
      ...(time.date
        ? { date: time.date }
        : { dateTime: time.dateTime!, ...(time.timeZone ? { timeZone: time.timeZone } : {}) }),
    };
  }
  if (body.attendees !== undefined) {
    if (!Array.isArray(body.attendees)) return 'Invalid attendee list.';
    next.attendees = (body.attendees as Array<{ email?: unknown }>).map((person) => ({
      email: String(person.email ?? ''),
      responseStatus: 'needsAction',
    }));
    if (next.attendees.some((person) => !person.email.includes('@'))) return 'Invalid attendee email.';
  }
  if (!(instant(next.end) > instant(next.start))) {
    return 'The specified time range is empty.';
  }
  Object.assign(event, next);
  return true;
}

function notify(
  account: Account,
  event: CalendarEvent,
  kind: 'created' | 'updated' | 'deleted',
  parameters: URLSearchParams,
) {
  const mode = parameters.get('sendUpdates') ?? 'none';
  if (mode !== 'all' || !event.attendees?.length) return;
  account.notifications.push({ eventId: event.id, kind, to: event.attendees.map((person) => person.email) });
}

function present(account: Account, event: CalendarEvent) {
  return {
    kind: 'calendar#event',
    etag: `"${event.sequence}-${Date.parse(event.updated)}"`,
    id: event.id,
    status: event.status,
    htmlLink: `https://www.google.com/calendar/event?eid=${Buffer.from(`${event.id} ${account.email}`).toString('base64url')}`,
    created: event.created,
    updated: event.updated,
    ...(event.summary !== undefined ? { summary: event.summary } : {}),
    ...(event.description !== undefined ? { description: event.description } : {}),
    ...(event.location !== undefined ? { location: event.location } : {}),
    creator: { email: account.email, self: true },
    organizer: { email: account.email, self: true },
    start: event.start,
    end: event.end,
    iCalUID: `${event.id}@google.com`,
    sequence: event.sequence,
    ...(event.attendees?.length ? { attendees: event.attendees } : {}),
    reminders: { useDefault: true },
    eventType: 'default',
  };
}

async function freeBusy(request: IncomingMessage, response: ServerResponse, account: Account): Promise<void> {
  const body = await readJson(request);
  const from = Date.parse(String(body?.timeMin ?? ''));
  const until = Date.parse(String(body?.timeMax ?? ''));
  if (!body || Number.isNaN(from) || Number.isNaN(until)) return badRequest(response, 'Missing timeMin or timeMax.');
  if (until <= from) return badRequest(response, 'The specified time range is empty.');
  const items = Array.isArray(body.items) ? (body.items as Array<{ id?: unknown }>) : [];
  const calendars: Record<string, unknown> = {};
  for (const item of items) {
    const id = String(item.id ?? '');
    if (id !== 'primary' && id.toLowerCase() !== account.email) {
      calendars[id] = { errors: [{ domain: 'global', reason: 'notFound' }], busy: [] };
      continue;
    }
    const intervals = account.events
      .filter((event) => event.status !== 'cancelled' && event.transparency !== 'transparent')
      .map((event) => [Math.max(instant(event.start), from), Math.min(instant(event.end), until)] as const)
      .filter(([start, end]) => end > start)
      .sort((a, b) => a[0] - b[0]);
    const merged: Array<[number, number]> = [];
    for (const [start, end] of intervals) {
      const last = merged.at(-1);
      if (last && start <= last[1]) last[1] = Math.max(last[1], end);
      else merged.push([start, end]);
    }
    calendars[id] = {
      busy: merged.map(([start, end]) => ({ start: new Date(start).toISOString(), end: new Date(end).toISOString() })),
    };
  }
  sendJson(response, 200, {
    kind: 'calendar#freeBusy',
    timeMin: new Date(from).toISOString(),
    timeMax: new Date(until).toISOString(),
    calendars,
  });
}
