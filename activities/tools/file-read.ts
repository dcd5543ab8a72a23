/**
 * `file_read`: reads a text file of the conversation's sandbox (sandbox.ts: paths relative to it, nothing outside it,
 * no symbolic links). At most `FILE_READ_MAX_BYTES` per call; `offset` pages through a longer file. Binary files are
 * refused with their size (code_execute can process them).
 */
import { constants } from 'node:fs';
import { z } from 'zod';
import { openNoFollow, openSandbox, resolveSandboxPath } from './sandbox.ts';
import { defineTool, ToolError } from './tool.ts';

/** Bytes one call returns at most. */
export const FILE_READ_MAX_BYTES = 100_000;

export const fileReadTool = defineTool({
  name: 'file_read',
  description:
    "Reads a text file from this conversation's sandbox directory (the files file_write and code_execute wrote). " +
    `Paths are relative to the sandbox (code sees it as /sandbox). Returns up to ${FILE_READ_MAX_BYTES} bytes; ` +
    'use offset to read further.',
  input: z.object({
    path: z.string().min(1).max(1_024).describe('Path of the file, relative to the sandbox, e.g. "results/out.csv"'),
    offset: z.number().int().min(0).optional().describe('Byte offset to start reading at (default 0)'),
    length: z
      .number()
      .int()
      .min(1)
      .max(FILE_READ_MAX_BYTES)
      .optional()
      .describe(`Bytes to read at most (default and maximum ${FILE_READ_MAX_BYTES})`),
  }),
  timeoutMs: 10_000,
  retry: { maximumAttempts: 1, initialIntervalMs: 0 },
  maxOutputChars: 120_000,
  configured: () => true,
  async run({ path: relativePath, offset = 0, length = FILE_READ_MAX_BYTES }, context) {
    const root = await openSandbox(context.settings, context.conversationId);
    const resolved = await resolveSandboxPath(root, relativePath);
    if (resolved.relative === '') throw new ToolError('the sandbox itself is a directory: use file_list');
    const file = await openNoFollow(resolved, constants.O_RDONLY);
    try {
      const stat = await file.stat();
      if (stat.isDirectory()) throw new ToolError(`"${resolved.relative}" is a directory: use file_list`);
      if (!stat.isFile()) throw new ToolError(`"${resolved.relative}" is not a regular file`);
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, stat.size - offset)));
      const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
      const chunk = buffer.subarray(0, bytesRead);
      if (chunk.includes(0)) {
        throw new ToolError(
          `"${resolved.relative}" is a binary file (${stat.size} bytes): process it with code_execute`,
        );
      }
      const end = offset + bytesRead;
      return {
        path: resolved.relative,
        size: stat.size,
        offset,
        content: chunk.toString('utf8'),
        ...(end < stat.size ? { next_offset: end, note: `${stat.size - end} more bytes: read on with offset` } : {}),
      };
    } finally {
      await file.close();
    }
  },
});
