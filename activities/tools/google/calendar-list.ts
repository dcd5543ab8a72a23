/**
 * `calendar_list`: the events of the user's calendar in a time range (`events.list`, recurring events expanded,
 * in start order), optionally matching a text. A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { calendarIdInput, presentEvent, type CalendarEvent } from './calendar-event.ts';
import { segment, workspaceOf, workspaceTool } from './workspace-tool.ts';

const rfc3339 = z
  .string()
  .trim()
  .regex(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/,
    'an RFC 3339 date-time with offset',
  );

export const calendarListTool = defineTool({
  name: 'calendar_list',
  description:
    'List the events of the user’s Google Calendar between two times (default: from now), in start order, ' +
    'optionally only those matching a text. Answers each event’s id, title, start, end, location and guests.',
  input: z
    .object({
      time_min: rfc3339.optional().describe('From (RFC 3339 with offset, e.g. 2026-12-01T00:00:00+01:00); default now'),
      time_max: rfc3339.optional().describe('Until (RFC 3339 with offset)'),
      query: z.string().trim().max(200).optional().describe('Text the events must contain'),
      calendar_id: calendarIdInput.optional(),
      max_results: z.number().int().min(1).max(100).optional().describe('Events at most (default 25)'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 16_000,
  async run({ time_min, time_max, query, calendar_id = 'primary', max_results = 25 }, context) {
    const { google, userId } = workspaceOf(context);
    const from = time_min ?? new Date().toISOString();
    const answer = (
      await google.request(
        userId,
        {
          family: 'calendar',
          path: `/calendars/${segment(calendar_id)}/events`,
          query: {
            timeMin: from,
            timeMax: time_max,
            q: query,
            singleEvents: true,
            orderBy: 'startTime',
            maxResults: max_results,
          },
        },
        context.signal,
      )
    ).json as { items?: CalendarEvent[]; timeZone?: string; nextPageToken?: string };
    const events = (answer.items ?? []).map(presentEvent);
    return {
      calendar: calendar_id,
      time_zone: answer.timeZone,
      from,
      ...(time_max ? { until: time_max } : {}),
      events,
      ...(answer.nextPageToken ? { note: 'more events follow: narrow the range' } : {}),
      ...(events.length === 0 ? { note: 'no events in this range' } : {}),
    };
  },
});
