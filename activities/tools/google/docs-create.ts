/**
 * `docs_create`: a new Google Doc with a title and, optionally, its first text (`documents.create`, then
 * `documents.batchUpdate` with one `insertText`). The user approves it first; it runs once per tool call.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { documentLink, type DocsDocument } from './docs-document.ts';
import { workspaceWriteTool, writeOf } from './workspace-tool.ts';

export const docsCreateTool = defineTool({
  name: 'docs_create',
  description:
    'Create a Google Doc in the user’s Drive with a title and optionally its text (plain text; paragraphs ' +
    'separated by newlines). Answers the new document’s id and link. The user is asked to approve it.',
  input: z
    .object({
      title: z.string().trim().min(1).max(300),
      text: z.string().max(500_000).optional().describe('The document’s text'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_000,
  async run({ title, text }, context) {
    const { google, userId, write } = writeOf(context, 'docs_create');
    return google.once(write, async () => {
      const document = (
        await google.request(
          userId,
          { family: 'docs', method: 'POST', path: '/documents', json: { title } },
          context.signal,
        )
      ).json as DocsDocument;
      if (text) {
        await google.request(
          userId,
          {
            family: 'docs',
            method: 'POST',
            path: `/documents/${encodeURIComponent(document.documentId)}:batchUpdate`,
            json: { requests: [{ insertText: { location: { index: 1 }, text } }] },
          },
          context.signal,
        );
      }
      return {
        created: true,
        document_id: document.documentId,
        title: document.title ?? title,
        link: documentLink(document.documentId),
        characters: text?.length ?? 0,
      };
    });
  },
});
