/**
 * `calendar_update`: changes an event of the user's calendar (`events.patch`: only the fields given). The user
 * approves it first; it runs once per tool call.
 */
import { z } from 'zod';
import { defineTool, ToolError } from '../tool.ts';
import {
  attendeesInput,
  calendarIdInput,
  eventTime,
  notifyInput,
  presentEvent,
  timeZoneInput,
  toEventTime,
  type CalendarEvent,
} from './calendar-event.ts';
import { resourceId, segment, workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const calendarUpdateTool = defineTool({
  name: 'calendar_update',
  description:
    'Change an event of the user’s Google Calendar: give its id (from calendar_list) and only the fields to change ' +
    '(title, start, end, description, location, guests: the list given replaces the guests). The user is asked to ' +
    'approve it.',
  input: z
    .object({
      event_id: resourceId('The event id (from calendar_list)'),
      summary: z.string().trim().min(1).max(500).optional(),
      start: eventTime('New start').optional(),
      end: eventTime('New end').optional(),
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
    const { google, userId, write } = writeOf(context, 'calendar_update');
    const changes = {
      ...(input.summary !== undefined ? { summary: input.summary } : {}),
      ...(input.start !== undefined ? { start: toEventTime(input.start, input.time_zone) } : {}),
      ...(input.end !== undefined ? { end: toEventTime(input.end, input.time_zone) } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.location !== undefined ? { location: input.location } : {}),
      ...(input.attendees !== undefined ? { attendees: input.attendees.map((email) => ({ email })) } : {}),
    };
    if (Object.keys(changes).length === 0) throw new ToolError('nothing to change: give at least one field');
    return google.once(write, async () => {
      const event = (
        await google.request(
          userId,
          {
            family: 'calendar',
            method: 'PATCH',
            path: `/calendars/${segment(input.calendar_id ?? 'primary')}/events/${segment(input.event_id)}`,
            query: { sendUpdates: input.notify_attendees ? 'all' : 'none' },
            json: changes,
          },
          context.signal,
        )
      ).json as CalendarEvent;
      return { updated: true, event: presentEvent(event) };
    });
  },
});
