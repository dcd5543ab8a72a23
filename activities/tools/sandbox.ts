/**
 * A conversation's sandbox: the one directory the file tools (file_read, file_write, file_list) and the code that
 * code_execute runs may touch. It lives under `settings.sandboxRoot`, named by a hash of the conversation id (so no
 * id can name a path), created on first use with mode 0700, and deleted with the session (`deleteSandbox`).
 *
 * Paths the model gives are relative to the sandbox. Refused: absolute paths, `..` anywhere, NUL bytes, and any
 * symbolic link on the way (the tools never create one and code_execute cannot, so a link is foreign; it is not
 * followed, even to a place inside the sandbox). The resolved path is checked with realpath as well, and files are
 * opened with O_NOFOLLOW, so a link put in the last segment after the check is refused too.
 *
 * Quota: a sandbox holds at most `settings.sandboxQuotaBytes` of file contents and `SANDBOX_MAX_ENTRIES` files and
 * directories. file_write refuses a write that would pass it; code_execute gives the code the room that is left and
 * stops it at the limit.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './tool.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';

/** Files and directories a sandbox may hold, whatever their size. */
export const SANDBOX_MAX_ENTRIES = 10_000;
/** Characters a path may have. */
const maxPathChars = 1_024;

type SandboxSettings = Pick<ToolSettings, 'sandboxRoot' | 'sandboxQuotaBytes'>;

/** The directory of a conversation's sandbox (which may not exist yet). */
export function sandboxDirectory(settings: SandboxSettings, conversationId: string): string {
  const name = createHash('sha256').update(conversationId).digest('hex').slice(0, 32);
  return path.join(path.resolve(settings.sandboxRoot), name);
}

/**
 * Creates `directory` with mode 0700 when missing, and its missing parents with the default mode: `mkdir -p` with a
 * mode gives it to every directory it makes, and the sandbox root's parent is the platform's data directory (`.data`),
 * which the embedded PostgreSQL's own user must be able to enter.
 */
export async function makePrivateDirectory(directory: string): Promise<void> {
  await mkdir(path.dirname(directory), { recursive: true });
  await mkdir(directory, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
}

/** Creates the conversation's sandbox when missing (mode 0700) and returns its real path. */
export async function openSandbox(settings: SandboxSettings, conversationId: string): Promise<string> {
  const directory = sandboxDirectory(settings, conversationId);
  await makePrivateDirectory(path.dirname(directory));
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const stat = await lstat(directory);
  if (!stat.isDirectory()) throw new Error(`the sandbox ${directory} is not a directory`);
  return realpath(directory);
}

/**
 * Carries a conversation's sandbox into the one it was linked into: it becomes that sandbox when the target has
 * none, else it moves in whole as the subdirectory `from-<channel>` (suffixed when taken), so no file of either
 * side is overwritten. The quota counts the result; a sandbox past it takes no new writes until files go.
 */
export async function mergeSandbox(
  settings: SandboxSettings,
  fromConversationId: string,
  intoConversationId: string,
  label: string,
): Promise<void> {
  const from = sandboxDirectory(settings, fromConversationId);
  if (!(await lstat(from).catch(() => null))?.isDirectory()) return;
  const into = sandboxDirectory(settings, intoConversationId);
  if (!(await lstat(into).catch(() => null))) {
    await rename(from, into);
    return;
  }
  const base = `from-${label.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  for (let suffix = 0; ; suffix++) {
    const destination = path.join(into, suffix ? `${base}-${suffix}` : base);
    if (await lstat(destination).catch(() => null)) continue;
    await rename(from, destination);
    return;
  }
}

/** Deletes a conversation's sandbox and everything in it (the session was deleted for good). */
export async function deleteSandbox(settings: SandboxSettings, conversationId: string): Promise<void> {
  await rm(sandboxDirectory(settings, conversationId), { recursive: true, force: true });
}

/**
 * The path's segments, checked: relative, no `..`, no NUL. `''` and `'.'` are the sandbox itself (no segments).
 * Pure, so code-runner.ts checks the paths its JavaScript API is given the same way.
 */
export function sandboxPathSegments(relativePath: string): string[] {
  if (relativePath.includes('\0')) throw new ToolError('the path contains a NUL byte');
  if (relativePath.length > maxPathChars) throw new ToolError(`the path is longer than ${maxPathChars} characters`);
  if (path.posix.isAbsolute(relativePath) || path.win32.isAbsolute(relativePath)) {
    throw new ToolError(
      `"${relativePath}" is an absolute path: paths are relative to the sandbox directory ` +
        '(code sees it as /sandbox, so /sandbox/data.csv is "data.csv")',
    );
  }
  const segments = relativePath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw new ToolError(`"${relativePath}" leaves the sandbox: ".." is not allowed`);
  return segments;
}

export interface ResolvedPath {
  /** Absolute path on the host. */
  absolute: string;
  /** Normalised path relative to the sandbox ('' for the sandbox itself). */
  relative: string;
}

/**
 * Resolves a model-given path inside the sandbox `root` (a real path, from `openSandbox`). Every existing segment
 * must be a directory or, for the last one, a regular file; a symbolic link anywhere is refused. With
 * `createParents`, missing directories on the way are created (0700).
 */
export async function resolveSandboxPath(
  root: string,
  relativePath: string,
  options: { createParents?: boolean } = {},
): Promise<ResolvedPath> {
  const segments = sandboxPathSegments(relativePath);
  let current = root;
  for (const [index, segment] of segments.entries()) {
    current = path.join(current, segment);
    const last = index === segments.length - 1;
    const stat = await lstat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return null;
      throw error;
    });
    if (stat === null) {
      if (last || !options.createParents) continue;
      await mkdir(current, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      continue;
    }
    if (stat.isSymbolicLink()) {
      throw new ToolError(`"${relativePath}" goes through a symbolic link, which the sandbox does not follow`);
    }
    if (!last && !stat.isDirectory()) throw new ToolError(`"${segments.slice(0, index + 1).join('/')}" is a file`);
  }
  // Belt and braces: whatever exists of the path must really be inside the sandbox.
  const existing = await realpath(current).catch(() => realpath(path.dirname(current)).catch(() => root));
  if (existing !== root && !existing.startsWith(root + path.sep)) {
    throw new ToolError(`"${relativePath}" leaves the sandbox`);
  }
  return { absolute: current, relative: segments.join('/') };
}

/** Opens a file of the sandbox without following a symbolic link in its last segment (O_NOFOLLOW). */
export async function openNoFollow(resolved: ResolvedPath, flags: number, mode = 0o600): Promise<FileHandle> {
  try {
    return await open(resolved.absolute, flags | constants.O_NOFOLLOW, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new ToolError(`"${resolved.relative}" is a symbolic link`);
    if (code === 'ENOENT') throw new ToolError(`"${resolved.relative}" does not exist`, { cause: error });
    if (code === 'EISDIR') throw new ToolError(`"${resolved.relative}" is a directory`, { cause: error });
    throw error;
  }
}

export interface SandboxEntry {
  /** Relative to the sandbox, with `/`. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mtimeMs: number;
}

/** The entries under `root` (symbolic links listed, never followed), depth first, sorted by name. */
export async function walkSandbox(
  root: string,
  { limit = SANDBOX_MAX_ENTRIES * 2, recursive = true }: { limit?: number; recursive?: boolean } = {},
): Promise<SandboxEntry[]> {
  const entries: SandboxEntry[] = [];
  const visit = async (directory: string, prefix: string): Promise<void> => {
    const names = (await readdir(directory)).sort();
    for (const name of names) {
      if (entries.length >= limit) return;
      const absolute = path.join(directory, name);
      const stat = await lstat(absolute).catch(() => null);
      if (!stat) continue;
      const relative = prefix === '' ? name : `${prefix}/${name}`;
      const type = stat.isFile()
        ? 'file'
        : stat.isDirectory()
          ? 'directory'
          : stat.isSymbolicLink()
            ? 'symlink'
            : 'other';
      entries.push({ path: relative, type, size: type === 'file' ? stat.size : 0, mtimeMs: stat.mtimeMs });
      if (type === 'directory' && recursive) await visit(absolute, relative);
    }
  };
  await visit(root, '');
  return entries;
}

export interface SandboxUsage {
  bytes: number;
  entries: number;
}

/** What the sandbox holds: bytes of file contents and number of entries. */
export async function sandboxUsage(root: string): Promise<SandboxUsage> {
  const entries = await walkSandbox(root);
  return { bytes: entries.reduce((sum, entry) => sum + entry.size, 0), entries: entries.length };
}

/** KiB, MiB or GiB with up to one decimal, for messages. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${Math.ceil(bytes / 1024)} KiB`;
  const [value, unit] = bytes < 1024 ** 3 ? [bytes / 1024 ** 2, 'MiB'] : [bytes / 1024 ** 3, 'GiB'];
  return `${Math.round(value * 10) / 10} ${unit}`;
}
