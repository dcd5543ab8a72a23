/**
 * `rag_search`: an agent searches the user's uploaded and indexed documents (PDFs, spreadsheets, CSV files, images'
 * text, texts) by meaning, as `GET /rag/search` does, and answers from what it finds with the file and location
 * (page, rows) each passage came from. Agent service only (it needs an account and `context.services.files`).
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';

export const ragSearchTool = defineTool({
  name: 'rag_search',
  description:
    "Search the user's own uploaded documents (PDF, Excel, CSV, images' text and texts they indexed) for passages " +
    'about a question. Answers the best passages with their file, title and location (page or rows): quote them and ' +
    'cite the location. Use it whenever the user asks about their documents, contracts, reports or files.',
  input: z
    .object({
      query: z.string().trim().min(1).max(2_000).describe('What to look for, in the words a passage would use'),
      k: z.number().int().min(1).max(20).optional().describe('How many passages (default 5)'),
      file_id: z
        .string()
        .regex(/^file_[A-Za-z0-9_-]{24}$/)
        .optional()
        .describe('Only this file (its id, file_…)'),
    })
    .strict(),
  timeoutMs: 30_000,
  retry: { maximumAttempts: 2, initialIntervalMs: 500 },
  maxOutputChars: 20_000,
  agentsOnly: true,
  configured: () => true,
  async run({ query, k, file_id: fileId }, context) {
    if (!context.userId) throw new ToolError('documents need a signed-in user');
    const files = context.services?.files;
    if (!files) throw new ToolError('document search is not available in this service');
    let hits: Awaited<ReturnType<typeof files.search>>;
    try {
      hits = await files.search(context.userId, query, { k: k ?? 5, ...(fileId ? { fileId } : {}) });
    } catch (error) {
      const type = (error as { type?: unknown }).type;
      if (typeof type === 'string' && type !== 'upstream_error' && type !== 'internal_error') {
        throw new ToolError(`the search was refused: ${(error as Error).message}`);
      }
      throw new ToolError('the search failed', { retryable: true, cause: error });
    }
    if (hits.length === 0) {
      const listed = await files.list(context.userId);
      return {
        results: [],
        note: listed.length
          ? `Nothing matched. The user's files: ${JSON.stringify(listed)} (a file must be indexed to be searched).`
          : 'The user has uploaded no documents.',
      };
    }
    return {
      results: hits.map((hit) => ({
        text: hit.text,
        score: hit.score,
        file_id: hit.fileId,
        title: hit.title,
        location: hit.location,
      })),
    };
  },
});
