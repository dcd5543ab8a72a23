/**
 * `read_upload`: an agent reads one of the user's uploaded files in order (a PDF page by page, a table row by row),
 * straight from the file, indexed or not; without `file_id` it lists the user's files. For a question about a
 * passage, `rag_search` finds it faster; this is for reading a document through, or a table's first rows. Agent
 * service only (it needs an account and `context.services.files`).
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';

/** Characters a call reads at most. */
const readChars = 12_000;

export const readUploadTool = defineTool({
  name: 'read_upload',
  description:
    "Read one of the user's uploaded files in order: a PDF from a page on, a CSV or Excel table from a row on. Without " +
    'file_id it lists the files (id, name, kind, whether indexed). The answer gives `next` to continue from.',
  input: z
    .object({
      file_id: z
        .string()
        .regex(/^file_[A-Za-z0-9_-]{24}$/)
        .optional()
        .describe('The file (file_…); leave out to list the files'),
      from: z.number().int().min(1).optional().describe('The page (PDF) or row (table) to start at; default 1'),
    })
    .strict(),
  timeoutMs: 60_000,
  retry: { maximumAttempts: 2, initialIntervalMs: 500 },
  maxOutputChars: readChars + 2_000,
  agentsOnly: true,
  configured: () => true,
  async run({ file_id: fileId, from }, context) {
    if (!context.userId) throw new ToolError('files need a signed-in user');
    const files = context.services?.files;
    if (!files) throw new ToolError('files are not available in this service');
    if (!fileId) {
      const listed = await files.list(context.userId);
      return listed.length ? { files: listed } : { files: [], note: 'The user has uploaded no files.' };
    }
    const read = await files.read(context.userId, fileId, { from: from ?? 1, maxChars: readChars });
    if (!read) throw new ToolError(`there is no file ${fileId} (list the files without file_id)`);
    return read;
  },
});
