/**
 * Locates (or builds once, with `go install`) the Temporal CLI whose `server start-dev` backs local runs and tests.
 *
 * Order: `TEMPORAL_CLI_PATH` (must exist) → the cache `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/temporal` →
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into that cache directory. Later CLI tags cannot be
 * `go install`ed (replace directives), so the version is pinned here.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { withFileLock } from './file-lock.ts';

export const temporalCliVersion = '1.5.1';
export const temporalCliModule = `github.com/temporalio/cli/cmd/temporal@v${temporalCliVersion}`;

const binaryName = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

/** The directory the CLI is cached in (and built into). */
export function temporalCliCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME?.trim() || join(homedir(), '.cache');
  return join(cacheHome, 'tessera', 'bin');
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `go` from PATH, else the standard tarball location. */
async function findGo(): Promise<string | undefined> {
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

function goInstall(goPath: string, gobin: string, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(goPath, ['install', temporalCliModule], {
      // A static build needs no C toolchain (the CLI's SQLite is pure Go), like the official release binaries.
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
    // Compiling prints nothing for minutes; keep the user informed.
    const heartbeat = setInterval(() => {
      log(`still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)...`);
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
            `go install ${temporalCliModule} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}\n` +
              'Set TEMPORAL_CLI_PATH to an existing Temporal CLI binary to skip the build.',
          ),
        );
    });
  });
}

/**
 * Returns the path of a Temporal CLI binary, building it with `go install` on first use. Concurrent callers
 * (e.g. `npm start` and `npm test` at once) share one build through a lock file next to the binary.
 */
export async function ensureTemporalCli(log: (line: string) => void = () => {}): Promise<string> {
  const configured = process.env.TEMPORAL_CLI_PATH?.trim();
  if (configured) {
    if (!(await isExecutable(configured))) {
      throw new Error(`TEMPORAL_CLI_PATH=${configured} does not exist or is not an executable file`);
    }
    return configured;
  }

  const binDir = temporalCliCacheDir();
  const binary = join(binDir, binaryName);
  if (await isExecutable(binary)) return binary;

  await mkdir(binDir, { recursive: true });
  return withFileLock(
    join(binDir, '.temporal-build.lock'),
    async () => {
      // Someone else may have finished the build while we waited for the lock.
      if (await isExecutable(binary)) return binary;
      const goPath = await findGo();
      if (!goPath) {
        throw new Error(
          `The Temporal CLI is not installed at ${binary} and Go is not available to build it. ` +
            `Install Go (https://go.dev/dl/) or set TEMPORAL_CLI_PATH to a Temporal CLI binary ` +
            `(https://docs.temporal.io/cli#install).`,
        );
      }
      log(`building the Temporal CLI v${temporalCliVersion} with go install (first run only; takes a few minutes)`);
      // Build into a private directory and move the result into place, so no one ever sees a partial binary.
      const buildDir = join(binDir, `.build-${process.pid}`);
      await rm(buildDir, { recursive: true, force: true });
      await mkdir(buildDir, { recursive: true });
      try {
        await goInstall(goPath, buildDir, log);
        await rename(join(buildDir, binaryName), binary);
      } finally {
        await rm(buildDir, { recursive: true, force: true });
      }
      log(`Temporal CLI installed at ${binary}`);
      return binary;
    },
    { onWait: (pid) => log(`waiting for another process (pid ${pid ?? '?'}) to finish building the Temporal CLI`) },
  );
}
