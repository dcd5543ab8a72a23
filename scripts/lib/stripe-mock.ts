/**
 * stripe-mock (https://github.com/stripe/stripe-mock): Stripe's own mock of its HTTP API, generated from the
 * OpenAPI spec. It validates requests and answers with fixture objects; it keeps no state (a created customer
 * is not retrievable later, every list answers the same fixture). Tests point the gateway's Stripe client at
 * it through STRIPE_API_BASE.
 *
 * Located like the Temporal CLI: `STRIPE_MOCK_PATH` (must exist) → the cache
 * `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/stripe-mock` → `go install github.com/stripe/stripe-mock@v…` into that
 * cache directory, once, under a lock file shared by concurrent callers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { withFileLock } from './file-lock.ts';
import { temporalCliCacheDir } from './temporal-cli.ts';

/** Pinned for reproducible runs (what `@latest` resolved to when billing was added). */
export const stripeMockVersion = '0.203.0';
export const stripeMockModule = `github.com/stripe/stripe-mock@v${stripeMockVersion}`;

const binaryName = process.platform === 'win32' ? 'stripe-mock.exe' : 'stripe-mock';

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
    const child = spawn(goPath, ['install', stripeMockModule], {
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
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `go install ${stripeMockModule} failed (${signal ?? `exit code ${code}`}):\n${tail.join('\n')}\n` +
              'Set STRIPE_MOCK_PATH to an existing stripe-mock binary to skip the build.',
          ),
        );
    });
  });
}

/** Returns the path of a stripe-mock binary, building it with `go install` on first use. */
export async function ensureStripeMock(log: (line: string) => void = () => {}): Promise<string> {
  const configured = process.env.STRIPE_MOCK_PATH?.trim();
  if (configured) {
    if (!(await isExecutable(configured))) {
      throw new Error(`STRIPE_MOCK_PATH=${configured} does not exist or is not an executable file`);
    }
    return configured;
  }
  const binDir = temporalCliCacheDir();
  const binary = join(binDir, binaryName);
  if (await isExecutable(binary)) return binary;

  await mkdir(binDir, { recursive: true });
  return withFileLock(
    join(binDir, '.stripe-mock-build.lock'),
    async () => {
      if (await isExecutable(binary)) return binary;
      const goPath = await findGo();
      if (!goPath) {
        throw new Error(
          `stripe-mock is not installed at ${binary} and Go is not available to build it. ` +
            'Install Go (https://go.dev/dl/) or set STRIPE_MOCK_PATH to a stripe-mock binary.',
        );
      }
      log(`building stripe-mock v${stripeMockVersion} with go install (first run only)`);
      // Build privately and move into place, so no one ever runs a partial binary.
      const buildDir = join(binDir, `.build-stripe-mock-${process.pid}`);
      await rm(buildDir, { recursive: true, force: true });
      await mkdir(buildDir, { recursive: true });
      try {
        await goInstall(goPath, buildDir, log);
        await rename(join(buildDir, binaryName), binary);
      } finally {
        await rm(buildDir, { recursive: true, force: true });
      }
      log(`stripe-mock installed at ${binary}`);
      return binary;
    },
    { onWait: (pid) => log(`waiting for another process (pid ${pid ?? '?'}) to finish building stripe-mock`) },
  );
}

export interface RunningStripeMock {
  /** Base URL of its HTTP listener, e.g. `http://127.0.0.1:12111`: the value for STRIPE_API_BASE. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts stripe-mock on 127.0.0.1 (`port` 0, the default, lets the system choose) and resolves once it
 * listens. Its HTTPS listener (always on) is bound to a system-chosen loopback port too, so runs never collide.
 */
export async function startStripeMock(
  options: { port?: number; log?: (line: string) => void; startTimeoutMs?: number } = {},
): Promise<RunningStripeMock> {
  const log = options.log ?? (() => {});
  const binary = await ensureStripeMock(log);
  const child = spawn(binary, ['-http-addr', `127.0.0.1:${options.port ?? 0}`, '-https-addr', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const settle = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('error', onError);
      child.off('exit', onExit);
      // Keep draining its output so a chatty mock never blocks on a full pipe.
      child.stdout!.resume();
      child.stderr!.resume();
    };
    const fail = (error: Error) => {
      settle();
      child.kill('SIGKILL');
      reject(new Error(`${error.message}\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /Listening for HTTP at address: \S+:(\d+)/.exec(output);
      if (!match) return;
      settle();
      resolve(`http://127.0.0.1:${match[1]}`);
    };
    const onError = (error: Error) => fail(error);
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`stripe-mock exited (${signal ?? `exit code ${code}`})`));
    const timer = setTimeout(
      () => fail(new Error('stripe-mock did not start listening in time')),
      options.startTimeoutMs ?? 30_000,
    );
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('error', onError);
    child.on('exit', onExit);
  });
  return { url, stop: () => stopChild(child) };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
