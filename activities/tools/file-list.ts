/**
 * `file_list`: lists a directory of the conversation's sandbox (sandbox.ts), optionally recursively, with sizes and
 * the quota in use. At most `FILE_LIST_MAX_ENTRIES` entries per call; symbolic links are shown, never followed.
 */
import { z } from 'zod';
import { openSandbox, resolveSandboxPath, sandboxUsage, walkSandbox, type SandboxEntry } from './sandbox.ts';
import { defineTool, ToolError } from './tool.ts';

/** Entries one call lists at most. */
export const FILE_LIST_MAX_ENTRIES = 500;

export const fileListTool = defineTool({
  name: 'file_list',
  description:
    "Lists the files in this conversation's sandbox directory (where file_write and code_execute put files; code " +
    'sees it as /sandbox), with sizes and the quota in use.',
  input: z.object({
    path: z
      .string()
      .max(1_024)
      .optional()
      .describe('Directory to list, relative to the sandbox (default: the sandbox)'),
    recursive: z.boolean().optional().describe('Include the contents of subdirectories (default false)'),
  }),
  timeoutMs: 10_000,
  retry: { maximumAttempts: 1, initialIntervalMs: 0 },
  maxOutputChars: 50_000,
  configured: () => true,
  async run({ path: relativePath = '.', recursive = false }, context) {
    const root = await openSandbox(context.settings, context.conversationId);
    const resolved = await resolveSandboxPath(root, relativePath);
    let all: SandboxEntry[];
    try {
      all = await walkSandbox(resolved.absolute, { limit: FILE_LIST_MAX_ENTRIES + 1, recursive });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new ToolError(`"${resolved.relative}" does not exist`);
      if (code === 'ENOTDIR') throw new ToolError(`"${resolved.relative}" is a file: use file_read`);
      throw error;
    }
    const prefix = resolved.relative === '' ? '' : `${resolved.relative}/`;
    const entries = all.slice(0, FILE_LIST_MAX_ENTRIES).map((entry) => ({
      path: prefix + entry.path,
      type: entry.type,
      ...(entry.type === 'file' ? { size: entry.size } : {}),
    }));
    const usage = await sandboxUsage(root);
    return {
      path: resolved.relative === '' ? '.' : resolved.relative,
      entries,
      ...(all.length > FILE_LIST_MAX_ENTRIES
        ? { truncated: `only the first ${FILE_LIST_MAX_ENTRIES} entries are listed` }
        : {}),
      sandbox_used_bytes: usage.bytes,
      sandbox_quota_bytes: context.settings.sandboxQuotaBytes,
    };
  },
});
