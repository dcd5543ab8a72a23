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
import { ensureGoBinary } from './go-binary.ts';

/** Pinned for reproducible runs (what `@latest` resolved to when billing was added). */
export const stripeMockVersion = '0.203.0';
export const stripeMockModule = `github.com/stripe/stripe-mock@v${stripeMockVersion}`;

/** Returns the path of a stripe-mock binary, building it with `go install` on first use. */
export function ensureStripeMock(log: (line: string) => void = () => {}): Promise<string> {
  return ensureGoBinary(
    { module: stripeMockModule, binary: 'stripe-mock', label: 'stripe-mock', overrideVariable: 'STRIPE_MOCK_PATH' },
    log,
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
