/**
 * Keeps a part of the platform running: starts it, and whenever it exits without being asked to, says so in the log
 * and starts it again after a backoff (0.5 s, doubling to 30 s; back to 0.5 s once a start has stayed up a minute).
 * A start that fails is retried the same way, so a part whose dependency is down comes up once the dependency does.
 * `npm start` supervises each part it starts (scripts/start.ts): the Temporal dev server, the embedded PostgreSQL,
 * the API process and the background worker; a server it only reuses is not its to restart. `npm run cluster`
 * (scripts/cluster.ts) supervises its Temporal server, API processes and workers the same way.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** One run of a part: resolves `exited` when it ends (with a few words on how), `stop` ends it on purpose. */
export interface PartRun {
  exited: Promise<string>;
  stop(): Promise<void>;
}

export interface SupervisedPart {
  name: string;
  /** How many times it was started again after an exit or a failed start. */
  restarts(): number;
  /** Stops restarting the part (a shutdown began: a part that exits now, from the terminal's Ctrl-C, stays down). */
  stopRestarting(): void;
  /** Stops supervising and stops the part's current run. */
  stop(): Promise<void>;
}

export interface SuperviseOptions {
  name: string;
  /** Starts the part; resolves once it serves (null: it was not started here, and there is nothing to supervise). */
  start: () => Promise<PartRun | null>;
  log: (line: string) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run that lasted this long resets the backoff. */
  stableAfterMs?: number;
}

/**
 * Starts the part once (a failure of this first start is thrown: `npm start` reports it and ends) and then keeps it
 * running until stop().
 */
export async function supervise(options: SuperviseOptions): Promise<SupervisedPart> {
  const { name, log } = options;
  const initialBackoffMs = options.initialBackoffMs ?? 500;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const stableAfterMs = options.stableAfterMs ?? 60_000;
  let current = await options.start();
  let stopping = false;
  let restarts = 0;
  let wake: (() => void) | null = null;
  const stopped = new Promise<void>((resolve) => (wake = resolve));

  const loop = async () => {
    let backoffMs = initialBackoffMs;
    while (current && !stopping) {
      const startedAt = Date.now();
      const how = await Promise.race([current.exited, stopped.then(() => null)]);
      if (stopping || how === null) return;
      if (Date.now() - startedAt >= stableAfterMs) backoffMs = initialBackoffMs;
      current = null;
      let failedStart = false;
      while (!current && !stopping) {
        log(
          failedStart
            ? `${name}: trying again in ${formatDelay(backoffMs)}`
            : `${name} ${how}; starting it again in ${formatDelay(backoffMs)}`,
        );
        await Promise.race([sleep(backoffMs), stopped]);
        backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
        if (stopping) return;
        restarts++;
        try {
          current = await options.start();
          if (!current) {
            log(`${name}: another process serves it now; no longer supervised here`);
            return;
          }
          log(`${name} is running again (restart ${restarts})`);
        } catch (error) {
          const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
          log(`${name} failed to start again: ${message}`);
          current = null;
          failedStart = true;
          continue;
        }
        break;
      }
    }
  };
  const looping = loop();

  return {
    name,
    restarts: () => restarts,
    stopRestarting() {
      stopping = true;
      wake?.();
    },
    async stop() {
      stopping = true;
      wake?.();
      await looping;
      await current?.stop();
    },
  };
}

function formatDelay(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/**
 * A start function for a Node.js program of the platform (`api/server.ts`, `worker/main.ts`) run as a child process
 * with this process's Node flags, its output on this process's (or appended to `logFile`): resolved once each of
 * `readyUrls` answers 2xx, thrown when the child exits before. It is told it is supervised (TESSERA_SUPERVISED), so it
 * drains and exits when this process is gone (process/signals.ts), never left running without its supervisor.
 */
export function nodeProgram(options: {
  script: string;
  env: Record<string, string | undefined>;
  readyUrls?: string[];
  /**
   * A file the child's stdout and stderr are appended to (written by the child itself, each run after the last),
   * instead of this process's output; a start that fails names it with its last lines. `npm run cluster` keeps one
   * per process.
   */
  logFile?: string;
  /** How long a start may take to answer (the first one bundles the workflows). Default 5 minutes. */
  startTimeoutMs?: number;
  /** After SIGTERM, how long it may drain before SIGKILL. Default 60 s. */
  stopGraceMs?: number;
}): () => Promise<PartRun> {
  const { logFile } = options;
  return async () => {
    let output: number | undefined;
    if (logFile) {
      mkdirSync(dirname(logFile), { recursive: true });
      output = openSync(logFile, 'a');
    }
    const child = spawn(process.execPath, [...process.execArgv, options.script], {
      env: { ...options.env, TESSERA_SUPERVISED: '1' } as NodeJS.ProcessEnv,
      stdio: output === undefined ? 'inherit' : ['ignore', output, output],
    });
    // The child holds its own copy of the descriptor.
    if (output !== undefined) closeSync(output);
    /** The end of the log file, for a start that failed. */
    const tail = async () => {
      if (!logFile) return '';
      const text = await readFile(logFile, 'utf8').catch(() => '');
      const lines = text.trimEnd().split('\n').slice(-20).join('\n');
      return ` (its log, ${logFile}, ends:\n${lines})`;
    };
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal ? `was killed (${signal})` : `exited with code ${code}`));
      child.once('error', (error) => resolve(`could not run (${error.message})`));
    });
    let ended: string | null = null;
    void exited.then((how) => (ended = how));
    const stop = async () => {
      if (ended === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), options.stopGraceMs ?? 60_000);
        await exited;
        clearTimeout(timer);
      }
    };
    const deadline = Date.now() + (options.startTimeoutMs ?? 300_000);
    for (const url of options.readyUrls ?? []) {
      for (;;) {
        if (ended !== null) throw new Error(`${options.script} ${ended} before it answered ${url}${await tail()}`);
        if (Date.now() > deadline) {
          await stop();
          throw new Error(`${options.script} did not answer ${url} in time${await tail()}`);
        }
        const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
          async (response) => {
            await response.body?.cancel();
            return response.ok;
          },
          () => false,
        );
        if (ok) break;
        await Promise.race([sleep(200), exited]);
      }
    }
    return { exited, stop };
  };
}
