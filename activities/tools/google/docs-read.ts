/**
 * `docs_read`: the title and text of a Google Doc (`documents.get`): paragraphs in order, tables as tab-separated
 * rows. Long documents come in parts (`offset`). A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { documentIdInput, documentLink, documentText, type DocsDocument } from './docs-document.ts';
import { cutText, offsetInput, textPageChars, workspaceOf, workspaceTool } from './workspace-tool.ts';

export const docsReadTool = defineTool({
  name: 'docs_read',
  description:
    'Read a Google Doc: its title and text (tables as tab-separated rows). Long documents come in parts: call ' +
    'again with next_offset.',
  input: z.object({ document_id: documentIdInput, offset: offsetInput }).strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: textPageChars + 1_000,
  async run({ document_id, offset = 0 }, context) {
    const { google, userId } = workspaceOf(context);
    const document = (
      await google.request(
        userId,
        { family: 'docs', path: `/documents/${encodeURIComponent(document_id)}` },
        context.signal,
      )
    ).json as DocsDocument;
    return {
      document_id: document.documentId,
      title: document.title ?? '',
      link: documentLink(document.documentId),
      ...cutText(documentText(document), offset, textPageChars),
    };
  },
});
