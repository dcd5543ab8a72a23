/**
 * The whole platform as `npm start` runs it (scripts/start.ts: Temporal dev server, embedded PostgreSQL, API with
 * its worker, background worker), in a process group of its own, for tests that stop or crash all of it at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { isRunning, processTree, startChild, waitForHttp } from '../../scripts/lib/processes.ts';

export { freePorts } from '../../scripts/lib/processes.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface PlatformProcess {
  pid: number;
  /** The last lines the platform printed (every process of it shares this output). */
  output(lines?: number): string;
  /** Resolves once `url` answers 2xx; throws with the output's tail if the platform exits or time runs out. */
  waitForHttp(url: string, timeoutMs: number): Promise<void>;
  /**
   * SIGKILL, all at once, to every process of the platform: its group, and every descendant (PostgreSQL's
   * backends run in sessions of their own). Resolves once none of them is left.
   */
  kill(): Promise<number[]>;
  /** SIGTERM (the platform drains), then SIGKILL to whatever is left after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** `node scripts/start.ts` (what `npm start` runs) with exactly `environment`, in its own process group. */
export function startPlatformProcess(environment: Record<string, string | undefined>): PlatformProcess {
  const child = startChild({
    name: 'the platform',
    command: process.execPath,
    args: [`${root}scripts/start.ts`],
    cwd: root,
    env: environment,
  });
  const pid = child.process.pid;
  if (pid === undefined) throw new Error('could not spawn scripts/start.ts');
  return {
    pid,
    output: child.output,
    waitForHttp: (url, timeoutMs) => waitForHttp(url, child, timeoutMs),
    async kill() {
      const tree = (await processTree(pid)).map((info) => info.pid);
      child.signalGroup('SIGKILL');
      for (const member of tree) {
        try {
          process.kill(member, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await child.exited;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const alive = (await Promise.all(tree.map(async (member) => ((await isRunning(member)) ? member : 0)))).filter(
          Boolean,
        );
        if (alive.length === 0) return tree;
        if (Date.now() > deadline) throw new Error(`processes ${alive.join(', ')} outlived SIGKILL`);
        await sleep(50);
      }
    },
    stop: (graceMs = 30_000) => child.stop(graceMs),
  };
}
