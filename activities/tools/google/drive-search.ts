/**
 * `drive_search`: files in the user's Google Drive whose name or content contains words (`files.list` with a Drive
 * query: `(name contains … or fullText contains …) and trashed = false`), optionally of one kind; without words, the
 * most recently modified files. A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { driveFileFields, driveLiteral, presentFile, type DriveFile } from './drive-file.ts';
import { workspaceOf, workspaceTool } from './workspace-tool.ts';

const kindMimeTypes = {
  document: 'application/vnd.google-apps.document',
  spreadsheet: 'application/vnd.google-apps.spreadsheet',
  presentation: 'application/vnd.google-apps.presentation',
  folder: 'application/vnd.google-apps.folder',
  pdf: 'application/pdf',
} as const;

export const driveSearchTool = defineTool({
  name: 'drive_search',
  description:
    'Search the user’s Google Drive for files whose name or text contains the words given (empty: the most ' +
    'recently modified files), optionally only Google Docs, Sheets, Slides, folders or PDFs. Answers each file’s id, ' +
    'name, kind, size, modification time and link; read one with drive_read (or sheets_read, docs_read).',
  input: z
    .object({
      query: z
        .string()
        .trim()
        .max(200)
        .default('')
        .describe('Words in the file’s name or text; empty for recent files'),
      kind: z.enum(['document', 'spreadsheet', 'presentation', 'folder', 'pdf']).optional(),
      max_results: z.number().int().min(1).max(50).optional().describe('Files at most (default 20)'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 10_000,
  async run({ query, kind, max_results = 20 }, context) {
    const { google, userId } = workspaceOf(context);
    const terms = ['trashed = false'];
    if (query) terms.unshift(`(name contains ${driveLiteral(query)} or fullText contains ${driveLiteral(query)})`);
    if (kind) terms.push(`mimeType = ${driveLiteral(kindMimeTypes[kind])}`);
    const answer = (
      await google.request(
        userId,
        {
          family: 'drive',
          path: '/files',
          query: {
            q: terms.join(' and '),
            pageSize: max_results,
            fields: `nextPageToken,files(${driveFileFields})`,
            // Drive does not sort full-text searches (it answers them by relevance).
            orderBy: query ? undefined : 'modifiedTime desc',
          },
        },
        context.signal,
      )
    ).json as { files?: DriveFile[]; nextPageToken?: string };
    const files = (answer.files ?? []).map(presentFile);
    return {
      query,
      files,
      ...(files.length === 0 ? { note: 'no file matches' } : {}),
      ...(answer.nextPageToken ? { note: 'more files match: add words to narrow the search' } : {}),
    };
  },
});
