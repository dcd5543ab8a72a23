/**
 * `gmail_send`: sends an e-mail from the user's Gmail (`users.messages.send`), as a reply in the original's thread
 * when `reply_to_message_id` names it. The user approves every send first, and it goes out once per tool call
 * (Gmail has no idempotency key of its own: the call is claimed in `workspace_writes` before sending).
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { composeMessage, outgoingMessage } from './gmail-message.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const gmailSendTool = defineTool({
  name: 'gmail_send',
  description:
    'Send an e-mail from the user’s Gmail account. To reply, give reply_to_message_id: the answer goes in that ' +
    'thread. The user is asked to approve every e-mail before it is sent.',
  input: z.object(outgoingMessage).strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run(input, context) {
    const { google, userId, write } = writeOf(context, 'gmail_send');
    return google.once(write, async () => {
      const message = await composeMessage(google, userId, input, context.signal);
      const sent = (
        await google.request(
          userId,
          { family: 'gmail', method: 'POST', path: '/users/me/messages/send', json: message },
          context.signal,
        )
      ).json as { id: string; threadId?: string };
      return { sent: true, message_id: sent.id, thread_id: sent.threadId, to: input.to, subject: input.subject };
    });
  },
});
