/**
 * `gmail_read`: one message of the user's Gmail in full (`users.messages.get`, `format=full`): its headers, the text
 * of its body (the text/plain parts, else the HTML made plain), its attachments' names and sizes. A long body is
 * answered in parts (`offset`). A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { attachments, bodyText, header, type GmailMessage } from './gmail-message.ts';
import {
  cutText,
  offsetInput,
  resourceId,
  segment,
  textPageChars,
  workspaceOf,
  workspaceTool,
} from './workspace-tool.ts';

export const gmailReadTool = defineTool({
  name: 'gmail_read',
  description:
    'Read one message of the user’s Gmail: sender, recipients, subject, date, the text of the body and the names of ' +
    'its attachments. Long bodies come in parts: call again with next_offset.',
  input: z
    .object({
      message_id: resourceId('The message id (from gmail_search)'),
      offset: offsetInput,
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: textPageChars + 2_000,
  async run({ message_id, offset = 0 }, context) {
    const { google, userId } = workspaceOf(context);
    const message = (
      await google.request(
        userId,
        { family: 'gmail', path: `/users/me/messages/${segment(message_id)}`, query: { format: 'full' } },
        context.signal,
      )
    ).json as GmailMessage;
    const files = attachments(message.payload);
    return {
      id: message.id,
      thread_id: message.threadId,
      from: header(message, 'From'),
      to: header(message, 'To'),
      cc: header(message, 'Cc'),
      subject: header(message, 'Subject') ?? '',
      date: header(message, 'Date'),
      labels: message.labelIds ?? [],
      body: cutText(bodyText(message.payload), offset, textPageChars),
      ...(files.length ? { attachments: files } : {}),
    };
  },
});
