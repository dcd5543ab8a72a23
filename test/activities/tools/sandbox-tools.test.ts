/**
 * The file tools (file_write, file_read, file_list) through `runTool` on a real directory: round trips, paging, the
 * quota, and every way out of the sandbox refused (`..`, absolute paths, NUL, symbolic links planted inside).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileListTool } from '../../../activities/tools/file-list.ts';
import { fileReadTool } from '../../../activities/tools/file-read.ts';
import { fileWriteTool } from '../../../activities/tools/file-write.ts';
import { runTool } from '../../../activities/tools/runtime.ts';
import { deleteSandbox, openSandbox, sandboxDirectory } from '../../../activities/tools/sandbox.ts';
import type { ToolDefinition } from '../../../activities/tools/tool.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';

let root: string;
let outside: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'tessera-sandboxes-'));
  outside = await mkdtemp(path.join(tmpdir(), 'tessera-outside-'));
  await writeFile(path.join(outside, 'secret.txt'), 'the host secret');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

function settings(quota = 1024 * 1024): ToolSettings {
  return testToolSettings({ sandboxRoot: root, sandboxQuotaBytes: quota });
}

let conversations = 0;
/** A fresh conversation, so every test has its own sandbox. */
function conversation(quota?: number) {
  const context = { conversationId: `conversation-${++conversations}`, settings: settings(quota) };
  const call = async (tool: ToolDefinition, args: Record<string, unknown>) =>
    runTool(tool, JSON.stringify(args), context);
  const ok = async (tool: ToolDefinition, args: Record<string, unknown>) => {
    const outcome = await call(tool, args);
    expect(outcome).toMatchObject({ ok: true });
    return JSON.parse(outcome.content) as Record<string, unknown>;
  };
  const refused = async (tool: ToolDefinition, args: Record<string, unknown>, pattern: RegExp) => {
    const outcome = await call(tool, args);
    expect(outcome.ok).toBe(false);
    expect(outcome.content).toMatch(pattern);
    return outcome.content;
  };
  return { context, call, ok, refused, directory: () => openSandbox(context.settings, context.conversationId) };
}

describe('file tools', () => {
  it('write, read and list round trip, with directories created on the way', async () => {
    const { ok } = conversation();
    expect(await ok(fileWriteTool, { path: 'notes/plan.md', content: '# Plan\nStep one — café\n' })).toMatchObject({
      path: 'notes/plan.md',
      bytes_written: 26,
      size: 26,
    });
    await ok(fileWriteTool, { path: './notes//todo.txt', content: 'a' });
    await ok(fileWriteTool, { path: 'notes/todo.txt', content: 'b', append: true });
    await ok(fileWriteTool, { path: 'top.txt', content: 'top' });

    expect(await ok(fileReadTool, { path: 'notes/plan.md' })).toMatchObject({
      path: 'notes/plan.md',
      size: 26,
      content: '# Plan\nStep one — café\n',
    });
    expect(await ok(fileReadTool, { path: 'notes/todo.txt' })).toMatchObject({ content: 'ab' });

    expect(await ok(fileListTool, {})).toEqual({
      path: '.',
      entries: [
        { path: 'notes', type: 'directory' },
        { path: 'top.txt', type: 'file', size: 3 },
      ],
      sandbox_used_bytes: 31,
      sandbox_quota_bytes: 1024 * 1024,
    });
    expect(await ok(fileListTool, { recursive: true })).toMatchObject({
      entries: [
        { path: 'notes', type: 'directory' },
        { path: 'notes/plan.md', type: 'file', size: 26 },
        { path: 'notes/todo.txt', type: 'file', size: 2 },
        { path: 'top.txt', type: 'file', size: 3 },
      ],
    });
    expect(await ok(fileListTool, { path: 'notes' })).toMatchObject({
      path: 'notes',
      entries: [
        { path: 'notes/plan.md', type: 'file' },
        { path: 'notes/todo.txt', type: 'file' },
      ],
    });
  });

  it('pages through a long file with offset and refuses binary files', async () => {
    const { ok, refused, directory } = conversation();
    const text = 'x'.repeat(150_000);
    await ok(fileWriteTool, { path: 'long.txt', content: text });
    const first = await ok(fileReadTool, { path: 'long.txt' });
    expect((first.content as string).length).toBe(100_000);
    expect(first.next_offset).toBe(100_000);
    const second = await ok(fileReadTool, { path: 'long.txt', offset: first.next_offset });
    expect((second.content as string).length).toBe(50_000);
    expect(second.next_offset).toBeUndefined();

    await writeFile(path.join(await directory(), 'image.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    await refused(fileReadTool, { path: 'image.bin' }, /binary file \(4 bytes\)/);
  });

  it('reports missing files, directories and files where directories are expected', async () => {
    const { ok, refused } = conversation();
    await refused(fileReadTool, { path: 'nope.txt' }, /"nope.txt" does not exist/);
    await refused(fileListTool, { path: 'nope' }, /"nope" does not exist/);
    await ok(fileWriteTool, { path: 'dir/file.txt', content: 'x' });
    await refused(fileReadTool, { path: 'dir' }, /is a directory/);
    await refused(fileWriteTool, { path: 'dir', content: 'x' }, /is a directory/);
    await refused(fileListTool, { path: 'dir/file.txt' }, /is a file/);
    await refused(fileWriteTool, { path: 'dir/file.txt/inner', content: 'x' }, /"dir\/file.txt" is a file/);
  });

  it('keeps a sandbox within its quota', async () => {
    const { ok, refused } = conversation(1_000);
    await ok(fileWriteTool, { path: 'a.txt', content: 'a'.repeat(800) });
    await refused(fileWriteTool, { path: 'b.txt', content: 'b'.repeat(300) }, /quota is 1 KiB .*does not fit/);
    await refused(fileWriteTool, { path: 'a.txt', content: 'a'.repeat(300), append: true }, /does not fit/);
    // Replacing a file frees what it held.
    await ok(fileWriteTool, { path: 'a.txt', content: 'a'.repeat(950) });
    expect(await ok(fileListTool, {})).toMatchObject({ sandbox_used_bytes: 950, sandbox_quota_bytes: 1_000 });
  });

  it('refuses paths with .. that leave the sandbox', async () => {
    const { ok, refused, directory } = conversation();
    await ok(fileWriteTool, { path: 'inside.txt', content: 'x' });
    const escape = path.relative(await directory(), path.join(outside, 'secret.txt'));
    await refused(fileReadTool, { path: escape }, /leaves the sandbox: "\.\." is not allowed/);
    await refused(fileReadTool, { path: '../inside.txt' }, /"\.\." is not allowed/);
    await refused(fileReadTool, { path: 'a/../inside.txt' }, /"\.\." is not allowed/);
    await refused(fileWriteTool, { path: `${escape}.new`, content: 'x' }, /"\.\." is not allowed/);
    await refused(fileListTool, { path: '..' }, /"\.\." is not allowed/);
    await expect(stat(path.join(outside, 'secret.txt.new'))).rejects.toThrow();
  });

  it('refuses absolute paths and NUL bytes', async () => {
    const { refused } = conversation();
    await refused(fileReadTool, { path: '/etc/passwd' }, /absolute path/);
    await refused(fileReadTool, { path: path.join(outside, 'secret.txt') }, /absolute path/);
    await refused(fileWriteTool, { path: '/tmp/escape.txt', content: 'x' }, /absolute path/);
    await refused(fileListTool, { path: '/' }, /absolute path/);
    await refused(fileReadTool, { path: 'a\u0000b' }, /path: contains the NUL character/);
  });

  it('holds a model’s arguments to the platform’s text rule: a control character is refused, nothing written', async () => {
    const { refused, ok } = conversation();
    await refused(fileWriteTool, { path: 'bell.txt', content: 'ding \u0007' }, /content: contains a control character/);
    await refused(fileWriteTool, { path: 'nul.txt', content: 'a\u0000b' }, /content: contains the NUL character/);
    expect(await ok(fileListTool, {})).toMatchObject({ entries: [] });
    // Tabs and newlines are text.
    await ok(fileWriteTool, { path: 'fine.txt', content: 'a\tb\r\n' });
  });

  it('does not follow symbolic links planted inside the sandbox to the outside', async () => {
    const { ok, refused, directory } = conversation();
    const sandbox = await directory();
    await symlink(path.join(outside, 'secret.txt'), path.join(sandbox, 'link.txt'));
    await symlink(outside, path.join(sandbox, 'linked-dir'));
    await symlink('../../../../../../../../etc/passwd', path.join(sandbox, 'relative-link'));

    await refused(fileReadTool, { path: 'link.txt' }, /symbolic link/);
    await refused(fileReadTool, { path: 'relative-link' }, /symbolic link/);
    await refused(fileReadTool, { path: 'linked-dir/secret.txt' }, /symbolic link/);
    await refused(fileWriteTool, { path: 'link.txt', content: 'overwritten' }, /symbolic link/);
    await refused(fileWriteTool, { path: 'linked-dir/new.txt', content: 'x' }, /symbolic link/);
    await refused(fileListTool, { path: 'linked-dir' }, /symbolic link/);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('the host secret');
    await expect(stat(path.join(outside, 'new.txt'))).rejects.toThrow();

    // Listed for what they are, never followed.
    const listing = await ok(fileListTool, { recursive: true });
    expect(listing.entries).toEqual([
      { path: 'link.txt', type: 'symlink' },
      { path: 'linked-dir', type: 'symlink' },
      { path: 'relative-link', type: 'symlink' },
    ]);
  });

  it('refuses a sandbox inside a symbolic link chain even when it points back inside', async () => {
    const { ok, refused, directory } = conversation();
    const sandbox = await directory();
    await ok(fileWriteTool, { path: 'real/file.txt', content: 'inside' });
    await symlink(path.join(sandbox, 'real'), path.join(sandbox, 'alias'));
    await refused(fileReadTool, { path: 'alias/file.txt' }, /symbolic link/);
  });

  it('gives each conversation its own private directory, named by a hash, deleted with the session', async () => {
    const first = conversation();
    const second = conversation();
    await first.ok(fileWriteTool, { path: 'mine.txt', content: 'first' });
    await second.refused(fileReadTool, { path: 'mine.txt' }, /does not exist/);

    const directory = await first.directory();
    expect(path.dirname(directory)).toBe(await realpath(root));
    expect(path.basename(directory)).toMatch(/^[0-9a-f]{32}$/);
    expect((await stat(directory)).mode & 0o777).toBe(0o700);
    // An id that looks like a path names nothing but its hash.
    expect(path.dirname(sandboxDirectory(settings(), '../../etc'))).toBe(root);

    await deleteSandbox(first.context.settings, first.context.conversationId);
    await expect(stat(directory)).rejects.toThrow();
    await first.refused(fileReadTool, { path: 'mine.txt' }, /does not exist/);
  });

  it('makes the sandbox root private but leaves the data directory it creates on the way enterable', async () => {
    // The root's parent is the platform's data directory, where the embedded PostgreSQL's own user keeps its cluster.
    const dataDirectory = path.join(outside, 'fresh-data');
    const sandboxRoot = path.join(dataDirectory, 'sandboxes');
    await openSandbox(testToolSettings({ sandboxRoot }), 'a-conversation');
    expect((await stat(sandboxRoot)).mode & 0o777).toBe(0o700);
    expect((await stat(dataDirectory)).mode & 0o077).not.toBe(0);
  });

  it('rejects invalid arguments before touching the disk', async () => {
    const { call } = conversation();
    const invalid = { ok: false, content: expect.stringMatching(/invalid arguments/) };
    expect(await call(fileWriteTool, { path: 'x.txt' })).toEqual(invalid);
    expect(await call(fileReadTool, { path: '' })).toEqual(invalid);
  });
});
