/**
 * `docs_append`: adds text at the end of a Google Doc (`documents.batchUpdate`, `insertText` at the end of the
 * body). The user approves it first; it runs once per tool call.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { documentIdInput, documentLink } from './docs-document.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const docsAppendTool = defineTool({
  name: 'docs_append',
  description:
    'Add text at the end of a Google Doc (plain text; start it with a newline to begin a new paragraph). The user ' +
    'is asked to approve it.',
  input: z
    .object({
      document_id: documentIdInput,
      text: z.string().min(1).max(500_000),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ document_id, text }, context) {
    const { google, userId, write } = writeOf(context, 'docs_append');
    return google.once(write, async () => {
      await google.request(
        userId,
        {
          family: 'docs',
          method: 'POST',
          path: `/documents/${encodeURIComponent(document_id)}:batchUpdate`,
          json: { requests: [{ insertText: { endOfSegmentLocation: {}, text } }] },
        },
        context.signal,
      );
      return { appended: true, document_id, characters: text.length, link: documentLink(document_id) };
    });
  },
});
