/**
 * A cross-process lock file for the dev bootstrap (one CLI build, one embedded PostgreSQL start at a time).
 * The file holds the owner's pid; a lock whose owner is no longer alive is stale and taken over.
 */
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FileLockOptions {
  /** Give up after this long (default 30 min: a first Temporal CLI build can be slow). */
  timeoutMs?: number;
  /** Called once when the lock is busy, so callers can say what they are waiting for. */
  onWait?: (ownerPid: number | undefined) => void;
}

/** Whether a process with this pid exists (EPERM: it exists but belongs to another user). */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(path: string): Promise<{ text: string; pid: number | undefined } | undefined> {
  try {
    const text = await readFile(path, 'utf8');
    const pid = Number.parseInt(text.trim(), 10);
    return { text, pid: Number.isNaN(pid) ? undefined : pid };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Runs `task` while holding the lock file at `path` (created with its directory if needed). */
export async function withFileLock<T>(path: string, task: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30 * 60_000);
  await mkdir(dirname(path), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = await readOwner(path);
    if (!owner) continue;
    // A half-written file (no pid yet) is only stale if it stays that way; an owner that died is stale at once.
    const stale =
      owner.pid === undefined
        ? Date.now() - (await stat(path).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs > 5_000
        : !isProcessAlive(owner.pid);
    if (stale) {
      const again = await readOwner(path);
      if (again?.text === owner.text) await unlink(path).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for lock ${path} (held by pid ${owner.pid ?? 'unknown'})`);
    }
    if (!announced) {
      announced = true;
      options.onWait?.(owner.pid);
    }
    await sleep(250);
  }
  try {
    return await task();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}
