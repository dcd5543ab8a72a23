/**
 * Tools the project builds from the Go module proxy on first use (the Temporal CLI, stripe-mock): located by
 * an override variable (must exist) → the cache `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/<binary>` →
 * `go install <module>` into that cache, once, under a lock file shared by concurrent callers.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { withFileLock } from './file-lock.ts';

export interface GoBinary {
  /** `module@version` to `go install`. */
  module: string;
  /** The binary's file name in the cache (without `.exe`). */
  binary: string;
  /** The name `go install` gives it (the package path's last element), when that differs from `binary`. */
  installedAs?: string;
  /** Human name for messages, e.g. "the Temporal CLI". */
  label: string;
  /** Environment variable naming an existing binary to use instead. */
  overrideVariable: string;
}

/** The directory tools are cached in (and built into). */
export function toolCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME?.trim() || join(homedir(), '.cache');
  return join(cacheHome, 'tessera', 'bin');
}

export async function isExecutable(path: string): Promise<boolean> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Returns the tool's path, building it with `go install` on first use. */
export async function ensureGoBinary(tool: GoBinary, log: (line: string) => void = () => {}): Promise<string> {
  const configured = process.env[tool.overrideVariable]?.trim();
  if (configured) {
    if (!(await isExecutable(configured))) {
      throw new Error(`${tool.overrideVariable}=${configured} does not exist or is not an executable file`);
    }
    return configured;
  }
  const binDir = toolCacheDir();
  const fileName = process.platform === 'win32' ? `${tool.binary}.exe` : tool.binary;
  const binary = join(binDir, fileName);
  if (await isExecutable(binary)) return binary;

  await mkdir(binDir, { recursive: true });
  return withFileLock(
    join(binDir, `.${tool.binary}-build.lock`),
    async () => {
      // Someone else may have finished the build while we waited for the lock.
      if (await isExecutable(binary)) return binary;
      const goPath = await findGo();
      if (!goPath) {
        throw new Error(
          `${tool.label} is not installed at ${binary} and Go is not available to build it. ` +
            `Install Go (https://go.dev/dl/) or set ${tool.overrideVariable} to an existing binary.`,
        );
      }
      log(`building ${tool.label} (${tool.module}) with go install, first run only`);
      // Build into a private directory and move the result into place, so no one ever runs a partial binary.
      const buildDir = join(binDir, `.build-${tool.binary}-${process.pid}`);
      await rm(buildDir, { recursive: true, force: true });
      await mkdir(buildDir, { recursive: true });
      try {
        await goInstall(goPath, tool, buildDir, log);
        const installed = tool.installedAs ?? tool.binary;
        await rename(join(buildDir, process.platform === 'win32' ? `${installed}.exe` : installed), binary);
      } finally {
        await rm(buildDir, { recursive: true, force: true });
      }
      log(`${tool.label} installed at ${binary}`);
      return binary;
    },
    { onWait: (pid) => log(`waiting for another process (pid ${pid ?? '?'}) to finish building ${tool.label}`) },
  );
}

/** `go` from PATH, else the standard tarball location. */
export async function findGo(): Promise<string | undefined> {
  const candidates = [
    ...(process.env.PATH ?? '')
      .split(process.platform === 'win32' ? ';' : ':')
      .filter(Boolean)
      .map((dir) => join(dir, process.platform === 'win32' ? 'go.exe' : 'go')),
    '/usr/local/go/bin/go',
  ];
  for (const candidate of candidates) if (await isExecutable(candidate)) return candidate;
  return undefined;
}

function goInstall(goPath: string, tool: GoBinary, gobin: string, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(goPath, ['install', tool.module], {
      // Static builds need no C toolchain, like the official release binaries.
      env: { CGO_ENABLED: '0', ...process.env, GOBIN: gobin },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        const trimmed = line.trimEnd();
        if (!trimmed) continue;
        tail.push(trimmed);
        if (tail.length > 40) tail.shift();
        log(`[go] ${trimmed}`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const started = Date.now();
    // Compiling can print nothing for minutes; keep the user informed.
    const heartbeat = setInterval(() => {
      log(`still building ${tool.label} (${Math.round((Date.now() - started) / 1000)} s)...`);
    }, 30_000);
    child.on('error', (error) => {
      clearInterval(heartbeat);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearInterval(heartbeat);
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `go install ${tool.module} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}\n` +
              `Set ${tool.overrideVariable} to an existing binary to skip the build.`,
          ),
        );
    });
  });
}
