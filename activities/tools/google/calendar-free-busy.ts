/**
 * `calendar_free_busy`: when the user's calendars (or colleagues' they can see) are busy between two times
 * (`freeBusy.query`), with the free gaps of the first calendar worked out. A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { calendarIdInput, timeZoneInput } from './calendar-event.ts';
import { workspaceOf, workspaceTool } from './workspace-tool.ts';

const rfc3339 = z
  .string()
  .trim()
  .regex(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/,
    'an RFC 3339 date-time with offset',
  );

interface Interval {
  start: string;
  end: string;
}

export const calendarFreeBusyTool = defineTool({
  name: 'calendar_free_busy',
  description:
    'Find when calendars are busy between two times (Google Calendar free/busy): the busy intervals of each ' +
    'calendar, and the free gaps of the first one. Calendars default to the user’s primary calendar.',
  input: z
    .object({
      time_min: rfc3339.describe('From (RFC 3339 with offset)'),
      time_max: rfc3339.describe('Until (RFC 3339 with offset)'),
      calendars: z.array(calendarIdInput).min(1).max(20).optional().describe('Calendar ids (default ["primary"])'),
      time_zone: timeZoneInput.optional(),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 8_000,
  async run({ time_min, time_max, calendars = ['primary'], time_zone }, context) {
    const { google, userId } = workspaceOf(context);
    const answer = (
      await google.request(
        userId,
        {
          family: 'calendar',
          method: 'POST',
          path: '/freeBusy',
          json: {
            timeMin: time_min,
            timeMax: time_max,
            ...(time_zone ? { timeZone: time_zone } : {}),
            items: calendars.map((id) => ({ id })),
          },
        },
        context.signal,
      )
    ).json as { calendars?: Record<string, { busy?: Interval[]; errors?: Array<{ reason?: string }> }> };
    const result = calendars.map((id) => {
      const entry = answer.calendars?.[id];
      return {
        calendar: id,
        busy: entry?.busy ?? [],
        ...(entry?.errors?.length ? { error: entry.errors.map((error) => error.reason).join(', ') } : {}),
      };
    });
    return {
      from: time_min,
      until: time_max,
      calendars: result,
      free: freeGaps(result[0]?.busy ?? [], time_min, time_max),
    };
  },
});

/** The gaps between busy intervals within the range. */
function freeGaps(busy: Interval[], from: string, until: string): Interval[] {
  const sorted = [...busy].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
  const gaps: Interval[] = [];
  let cursor = Date.parse(from);
  for (const interval of sorted) {
    const start = Date.parse(interval.start);
    if (start > cursor) gaps.push({ start: new Date(cursor).toISOString(), end: new Date(start).toISOString() });
    cursor = Math.max(cursor, Date.parse(interval.end));
  }
  const end = Date.parse(until);
  if (end > cursor) gaps.push({ start: new Date(cursor).toISOString(), end: new Date(end).toISOString() });
  return gaps;
}
