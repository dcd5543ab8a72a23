/**
 * `drive_read`: the text of a file in the user's Google Drive: a Google Doc or Slides exported as plain text, a
 * Google Sheet as CSV (its first sheet, which is what Drive exports; sheets_read reads any range), a PDF's text
 * layer read by pdf.js in its worker thread (activities/rag/extract.ts, as uploads are read), and text files as they
 * are. Long text comes in parts (`offset`). A read: runs at once.
 */
import { z } from 'zod';
import { ExtractionError, pdfBytesText } from '../../rag/extract.ts';
import { defineTool, ToolError } from '../tool.ts';
import { driveFileFields, presentFile, type DriveFile } from './drive-file.ts';
import {
  cutText,
  offsetInput,
  resourceId,
  segment,
  textPageChars,
  workspaceOf,
  workspaceTool,
} from './workspace-tool.ts';

const exports: Record<string, string> = {
  'application/vnd.google-apps.document': 'text/plain',
  'application/vnd.google-apps.presentation': 'text/plain',
  'application/vnd.google-apps.spreadsheet': 'text/csv',
};

const textTypes = /^(text\/|application\/(json|xml|csv|x-yaml|yaml|javascript|x-sh|sql)\b)/;

export const driveReadTool = defineTool({
  name: 'drive_read',
  description:
    'Read the text of a file in the user’s Google Drive by its id (from drive_search): Google Docs and Slides as ' +
    'text, Google Sheets as CSV (the first sheet), PDFs’ text, and text files. Long files come in parts: call ' +
    'again with next_offset.',
  input: z
    .object({
      file_id: resourceId('The file id (from drive_search)'),
      offset: offsetInput,
    })
    .strict(),
  timeoutMs: 120_000,
  ...workspaceTool,
  maxOutputChars: textPageChars + 2_000,
  async run({ file_id, offset = 0 }, context) {
    const { google, userId } = workspaceOf(context);
    const path = `/files/${segment(file_id)}`;
    const file = (
      await google.request(userId, { family: 'drive', path, query: { fields: driveFileFields } }, context.signal)
    ).json as DriveFile;
    const mimeType = file.mimeType ?? '';
    let text: string;
    let morePages: string | undefined;
    if (exports[mimeType]) {
      text = (
        await google.request(
          userId,
          { family: 'drive', path: `${path}/export`, query: { mimeType: exports[mimeType] }, read: 'text' },
          context.signal,
        )
      ).text;
    } else if (mimeType === 'application/pdf') {
      const { bytes } = await google.request(
        userId,
        { family: 'drive', path, query: { alt: 'media' }, read: 'bytes' },
        context.signal,
      );
      try {
        const { pages, texts } = await pdfBytesText(bytes, 1, offset + textPageChars);
        text = texts.map((page) => `[page ${page.page}]\n${page.text}`).join('\n\n');
        const last = texts.at(-1)?.page ?? 0;
        if (last < pages) morePages = `pages 1-${last} of ${pages} read so far`;
        if (pages > 0 && texts.every((page) => page.text.trim() === '')) {
          text = '';
          morePages = `this PDF has ${pages} pages but no text layer (a scan): its text cannot be read`;
        }
      } catch (error) {
        if (error instanceof ExtractionError) throw new ToolError(error.message);
        throw error;
      }
    } else if (textTypes.test(mimeType)) {
      text = (
        await google.request(userId, { family: 'drive', path, query: { alt: 'media' }, read: 'text' }, context.signal)
      ).text;
    } else {
      throw new ToolError(
        `${file.name ?? file_id} is ${mimeType || 'a file of unknown type'}: drive_read reads Google Docs, Sheets, ` +
          'Slides, PDFs and text files',
      );
    }
    const part = cutText(text, offset, textPageChars);
    const more =
      morePages && part.next_offset === undefined && text.length > 0
        ? { next_offset: text.length, note: `${morePages}: call again with offset ${text.length} to read on` }
        : morePages
          ? { pages_note: morePages }
          : {};
    return { file: presentFile(file), ...part, ...more };
  },
});
