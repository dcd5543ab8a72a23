/**
 * Google Calendar events both ways, for the calendar tools: the times the model gives (a date for an all-day event,
 * an RFC 3339 date-time with an offset, or a local date-time with an IANA time zone) as the API's `{date}` or
 * `{dateTime, timeZone}`, and the fields of an `Event` the model reads.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../tool.ts';

const datePattern = /^\d{4}-\d{2}-\d{2}$/;
const dateTimePattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/;

export const eventTime = (what: string) =>
  z
    .string()
    .trim()
    .refine((value) => datePattern.test(value) || dateTimePattern.test(value), {
      message:
        'a date (2026-12-24, all day) or a date-time (2026-12-24T15:00:00+01:00, or without offset with time_zone)',
    })
    .describe(`${what}: a date (YYYY-MM-DD) for an all-day event, or a date-time (YYYY-MM-DDTHH:MM[:SS][±HH:MM])`);

export const timeZoneInput = z
  .string()
  .trim()
  .regex(/^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/, 'an IANA time zone such as Europe/Berlin')
  .max(64)
  .describe('IANA time zone (e.g. Europe/Berlin) for date-times given without an offset');

export const calendarIdInput = z
  .string()
  .trim()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z0-9_.@#-]+$/, 'a calendar id: "primary" or an address-like id')
  .describe('The calendar: "primary" (default) or a calendar id');

/** The API's form of a time the model gave. */
export function toEventTime(value: string, timeZone: string | undefined): Record<string, string> {
  if (datePattern.test(value)) return { date: value };
  const hasOffset = /(Z|[+-]\d{2}:\d{2})$/.test(value);
  if (!hasOffset && !timeZone) {
    throw new ToolError(`${value} has no UTC offset: give one (e.g. +01:00) or a time_zone`);
  }
  return { dateTime: value, ...(timeZone ? { timeZone } : {}) };
}

export interface CalendarEvent {
  id: string;
  status?: string;
  summary?: string;
  description?: string;
  location?: string;
  htmlLink?: string;
  start?: { date?: string; dateTime?: string; timeZone?: string };
  end?: { date?: string; dateTime?: string; timeZone?: string };
  attendees?: Array<{ email: string; responseStatus?: string; self?: boolean; organizer?: boolean }>;
  organizer?: { email?: string };
}

/** What the model reads of an event. */
export function presentEvent(event: CalendarEvent) {
  const when = (time: CalendarEvent['start']) =>
    time?.date ?? (time?.dateTime ? `${time.dateTime}${time.timeZone ? ` (${time.timeZone})` : ''}` : undefined);
  return {
    id: event.id,
    summary: event.summary ?? '(no title)',
    start: when(event.start),
    end: when(event.end),
    all_day: event.start?.date !== undefined,
    ...(event.location ? { location: event.location } : {}),
    ...(event.description ? { description: event.description.slice(0, 1_000) } : {}),
    ...(event.attendees?.length
      ? { attendees: event.attendees.map((person) => ({ email: person.email, response: person.responseStatus })) }
      : {}),
    ...(event.status && event.status !== 'confirmed' ? { status: event.status } : {}),
    ...(event.htmlLink ? { link: event.htmlLink } : {}),
  };
}

/**
 * The id an event created by a tool call gets: Google lets the client choose it (base32hex, 5-1024 characters), so a
 * repeated insert of the same call answers 409 instead of creating a second event.
 */
export function eventIdOf(callKey: string): string {
  const hash = createHash('sha256').update(`tessera-calendar:${callKey}`).digest('hex');
  // Base 32 with digits 0-9 and letters a-v is exactly base32hex.
  return `t${BigInt(`0x${hash}`).toString(32)}`;
}

export const attendeesInput = z.array(z.email().max(254)).max(100).optional().describe('Guests’ e-mail addresses');

export const notifyInput = z
  .boolean()
  .optional()
  .describe('Whether Google e-mails the guests about it (default false)');
