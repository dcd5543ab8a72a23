/**
 * `calendar_create`: a new event in the user's calendar (`events.insert`). The user approves it first. Created once
 * per tool call by Google's own rule: the event's id is derived from the call key, so a repeated insert answers 409
 * and the tool answers the event that exists.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import {
  attendeesInput,
  calendarIdInput,
  eventIdOf,
  eventTime,
  notifyInput,
  presentEvent,
  timeZoneInput,
  toEventTime,
  type CalendarEvent,
} from './calendar-event.ts';
import { segment, workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const calendarCreateTool = defineTool({
  name: 'calendar_create',
  description:
    'Create an event in the user’s Google Calendar: title, start and end (dates for an all-day event, whose end ' +
    'date is the day after it ends), optional description, location and guests. The user is asked to approve it.',
  input: z
    .object({
      summary: z.string().trim().min(1).max(500).describe('The event’s title'),
      start: eventTime('Start'),
      end: eventTime('End'),
      time_zone: timeZoneInput.optional(),
      description: z.string().max(8_000).optional(),
      location: z.string().max(500).optional(),
      attendees: attendeesInput,
      notify_attendees: notifyInput,
      calendar_id: calendarIdInput.optional(),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 2_000,
  async run(input, context) {
    const { google, userId, write } = writeOf(context, 'calendar_create');
    const calendar = segment(input.calendar_id ?? 'primary');
    const id = eventIdOf(write.callKey);
    const body = {
      id,
      summary: input.summary,
      start: toEventTime(input.start, input.time_zone),
      end: toEventTime(input.end, input.time_zone),
      ...(input.description ? { description: input.description } : {}),
      ...(input.location ? { location: input.location } : {}),
      ...(input.attendees?.length ? { attendees: input.attendees.map((email) => ({ email })) } : {}),
    };
    return google.once(write, async () => {
      const created = await google.request(
        userId,
        {
          family: 'calendar',
          method: 'POST',
          path: `/calendars/${calendar}/events`,
          query: { sendUpdates: input.notify_attendees ? 'all' : 'none' },
          json: body,
          accept: [409],
        },
        context.signal,
      );
      // 409: this call created it already (an attempt whose answer was lost): answer that event.
      const event =
        created.status === 409
          ? ((
              await google.request(
                userId,
                { family: 'calendar', path: `/calendars/${calendar}/events/${segment(id)}` },
                context.signal,
              )
            ).json as CalendarEvent)
          : (created.json as CalendarEvent);
      return { created: true, event: presentEvent(event) };
    });
  },
});
