/**
 * `gmail_search`: the user's mail matching a Gmail search (the search box's syntax: `from:ana invoice`,
 * `is:unread newer_than:7d`), newest first: `users.messages.list` for the ids, then each message's headers and
 * snippet (`users.messages.get`, `format=metadata`). A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { summary, type GmailMessage } from './gmail-message.ts';
import { segment, workspaceOf, workspaceTool } from './workspace-tool.ts';

export const gmailSearchTool = defineTool({
  name: 'gmail_search',
  description:
    'Search the user’s Gmail with Gmail’s search syntax (e.g. "from:ana@example.com invoice", "is:unread ' +
    'newer_than:7d", "subject:offsite"; empty: the newest mail). Answers each message’s id, sender, recipients, ' +
    'subject, date, a snippet and whether it is unread; read a whole message with gmail_read.',
  input: z
    .object({
      query: z.string().max(500).default('').describe('A Gmail search; empty for the newest messages'),
      max_results: z.number().int().min(1).max(25).optional().describe('Messages at most (default 10)'),
      page_token: z.string().max(500).optional().describe('next_page_token of an earlier answer, for more'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 12_000,
  async run({ query, max_results = 10, page_token }, context) {
    const { google, userId } = workspaceOf(context);
    const list = (
      await google.request(
        userId,
        {
          family: 'gmail',
          path: '/users/me/messages',
          query: { q: query || undefined, maxResults: max_results, pageToken: page_token },
        },
        context.signal,
      )
    ).json as { messages?: Array<{ id: string }>; nextPageToken?: string; resultSizeEstimate?: number };
    const messages = await Promise.all(
      (list.messages ?? []).map(
        async ({ id }) =>
          (
            await google.request(
              userId,
              {
                family: 'gmail',
                path: `/users/me/messages/${segment(id)}`,
                query: { format: 'metadata', metadataHeaders: ['From', 'To', 'Subject', 'Date'] },
              },
              context.signal,
            )
          ).json as GmailMessage,
      ),
    );
    return {
      query,
      messages: messages.map(summary),
      ...(list.nextPageToken ? { next_page_token: list.nextPageToken } : {}),
      ...(messages.length === 0 ? { note: 'no message matches this search' } : {}),
    };
  },
});
