/**
 * `file_write`: writes (or appends to) a text file in the conversation's sandbox (sandbox.ts), creating missing
 * directories. At most `FILE_WRITE_MAX_BYTES` per call, and never past the sandbox's quota
 * (`settings.sandboxQuotaBytes` of contents, `SANDBOX_MAX_ENTRIES` entries). Never writes through a symbolic link.
 */
import { constants } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { z } from 'zod';
import {
  formatBytes,
  openNoFollow,
  openSandbox,
  resolveSandboxPath,
  SANDBOX_MAX_ENTRIES,
  sandboxUsage,
} from './sandbox.ts';
import { defineTool, ToolError } from './tool.ts';

/** Bytes one call writes at most. */
export const FILE_WRITE_MAX_BYTES = 1024 * 1024;

export const fileWriteTool = defineTool({
  name: 'file_write',
  description:
    "Writes a UTF-8 text file in this conversation's sandbox directory, replacing it (or appending with " +
    'append: true); missing directories are created. Paths are relative to the sandbox (code_execute sees it as ' +
    `/sandbox). Up to ${formatBytes(FILE_WRITE_MAX_BYTES)} per call, within the sandbox's quota.`,
  input: z.object({
    path: z.string().min(1).max(1_024).describe('Path of the file, relative to the sandbox, e.g. "notes/plan.md"'),
    content: z.string().max(FILE_WRITE_MAX_BYTES).describe('The text to write'),
    append: z.boolean().optional().describe('Append to the file instead of replacing it (default false)'),
  }),
  timeoutMs: 10_000,
  retry: { maximumAttempts: 1, initialIntervalMs: 0 },
  maxOutputChars: 2_000,
  configured: () => true,
  async run({ path: relativePath, content, append = false }, context) {
    const { sandboxQuotaBytes } = context.settings;
    const bytes = Buffer.byteLength(content, 'utf8');
    if (bytes > FILE_WRITE_MAX_BYTES) {
      throw new ToolError(
        `the content is ${formatBytes(bytes)}; one call writes ${formatBytes(FILE_WRITE_MAX_BYTES)} at most`,
      );
    }
    const root = await openSandbox(context.settings, context.conversationId);
    const checked = await resolveSandboxPath(root, relativePath);
    if (checked.relative === '') throw new ToolError('the path names the sandbox directory itself');
    const existing = await lstat(checked.absolute).catch(() => null);
    if (existing?.isDirectory()) throw new ToolError(`"${checked.relative}" is a directory`);
    const usage = await sandboxUsage(root);
    const after = usage.bytes - (append ? 0 : (existing?.size ?? 0)) + bytes;
    if (after > sandboxQuotaBytes) {
      throw new ToolError(
        `the sandbox quota is ${formatBytes(sandboxQuotaBytes)} and ${formatBytes(usage.bytes)} is used: ` +
          `this write does not fit (delete or shrink files with code_execute)`,
      );
    }
    if (!existing && usage.entries + checked.relative.split('/').length > SANDBOX_MAX_ENTRIES) {
      throw new ToolError(`the sandbox holds ${SANDBOX_MAX_ENTRIES} files and directories at most`);
    }
    const resolved = await resolveSandboxPath(root, relativePath, { createParents: true });
    const flags = constants.O_WRONLY | constants.O_CREAT | (append ? constants.O_APPEND : constants.O_TRUNC);
    const file = await openNoFollow(resolved, flags);
    try {
      if (!(await file.stat()).isFile()) throw new ToolError(`"${resolved.relative}" is not a regular file`);
      await file.writeFile(content, 'utf8');
      const { size } = await file.stat();
      return {
        path: resolved.relative,
        bytes_written: bytes,
        size,
        sandbox_used_bytes: after,
        sandbox_quota_bytes: sandboxQuotaBytes,
      };
    } finally {
      await file.close();
    }
  },
});
