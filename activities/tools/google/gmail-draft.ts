/**
 * `gmail_draft`: saves an e-mail as a draft in the user's Gmail (`users.drafts.create`), for them to finish and send
 * from Gmail; a reply when `reply_to_message_id` names the original (same thread, `In-Reply-To`). A write into the
 * mailbox: the user approves it first, and it is saved once per tool call.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { composeMessage, outgoingMessage } from './gmail-message.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const gmailDraftTool = defineTool({
  name: 'gmail_draft',
  description:
    'Save an e-mail as a draft in the user’s Gmail (not sent). To reply, give reply_to_message_id: the draft joins ' +
    'that thread. The user is asked to approve it first.',
  input: z.object(outgoingMessage).strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run(input, context) {
    const { google, userId, write } = writeOf(context, 'gmail_draft');
    return google.once(write, async () => {
      const message = await composeMessage(google, userId, input, context.signal);
      const draft = (
        await google.request(
          userId,
          { family: 'gmail', method: 'POST', path: '/users/me/drafts', json: { message } },
          context.signal,
        )
      ).json as { id: string; message?: { id: string; threadId?: string } };
      return {
        drafted: true,
        draft_id: draft.id,
        message_id: draft.message?.id,
        thread_id: draft.message?.threadId,
        to: input.to,
        subject: input.subject,
      };
    });
  },
});
