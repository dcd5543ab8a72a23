/**
 * `calendar_delete`: deletes an event of the user's calendar (`events.delete`). The user approves it first; it runs
 * once per tool call (an event already deleted, which Google answers 410 Gone, counts as deleted).
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { calendarIdInput, notifyInput } from './calendar-event.ts';
import { resourceId, segment, workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const calendarDeleteTool = defineTool({
  name: 'calendar_delete',
  description:
    'Delete an event from the user’s Google Calendar by its id (from calendar_list). The user is asked to approve it.',
  input: z
    .object({
      event_id: resourceId('The event id (from calendar_list)'),
      notify_attendees: notifyInput,
      calendar_id: calendarIdInput.optional(),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 500,
  async run({ event_id, notify_attendees, calendar_id = 'primary' }, context) {
    const { google, userId, write } = writeOf(context, 'calendar_delete');
    return google.once(write, async () => {
      const answer = await google.request(
        userId,
        {
          family: 'calendar',
          method: 'DELETE',
          path: `/calendars/${segment(calendar_id)}/events/${segment(event_id)}`,
          query: { sendUpdates: notify_attendees ? 'all' : 'none' },
          read: 'none',
          accept: [410],
        },
        context.signal,
      );
      return { deleted: true, event_id, ...(answer.status === 410 ? { note: 'it was already deleted' } : {}) };
    });
  },
});
