/**
 * Tool engines and the process's start (`warmToolEngines`, which every process that runs turns calls when its worker
 * starts): by default nothing is loaded (an engine starts at its first call), and the engines ENGINES_WARM_AT_START
 * names (here the calculator's thread and a JavaScript runner) are running and waiting before any call comes.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { warmToolEngines } from '../../../activities/tools/index.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';
import { waitFor } from '../../helpers/wait.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'tessera-engines-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The command lines of this process's children (from /proc). */
function children(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid) found.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * Warms the tool engines with this test's sandbox root (and `enginesWarmAtStart`), watching the threads started
 * meanwhile, then hands `check` what it saw: the threads, this test's runners, and the engines' start-up failures.
 */
async function warmWatched(
  enginesWarmAtStart: ToolSettings['enginesWarmAtStart'],
  check: (seen: { threads: unknown[]; runners: () => string[]; failures: string[] }) => Promise<void>,
): Promise<void> {
  const threads: unknown[] = [];
  const onThread = (message: unknown) => threads.push(message);
  subscribe('worker_threads', onThread);
  const failures: string[] = [];
  // Only runners of this test's sandbox root count: the same Jest worker may have run other test files.
  const ours = `--allow-fs-write=${path.join(await realpath(root), '.runners')}/`;
  try {
    warmToolEngines(
      testToolSettings({ sandboxRoot: root, sandboxQuotaBytes: 1024 * 1024, enginesWarmAtStart }),
      (tool, error) => failures.push(`${tool}: ${String(error)}`),
    );
    await check({ threads, runners: () => children().filter((command) => command.includes(ours)), failures });
  } finally {
    unsubscribe('worker_threads', onThread);
  }
}

describe('tool engines', () => {
  it('are not loaded when the worker starts unless ENGINES_WARM_AT_START names them', async () => {
    await warmWatched(undefined, async ({ threads, runners, failures }) => {
      // A thread or a runner is created synchronously when an engine starts, so a turn of the event loop is enough
      // to know that none did.
      await new Promise((resolve) => setImmediate(resolve));
      expect(threads).toEqual([]);
      expect(runners()).toEqual([]);
      expect(failures).toEqual([]);
    });
  });

  it('named in ENGINES_WARM_AT_START start when the worker starts, before any call', async () => {
    await warmWatched(['calculator', 'javascript'], async ({ threads, runners, failures }) => {
      // The calculator's evaluator thread.
      await waitFor('the calculator thread', async () => threads.length >= 1);
      // A JavaScript runner, waiting for a call with a staging directory of its own (Python, not named, starts with
      // its first call).
      const [runner] = await waitFor('a waiting runner', async () => runners().length > 0 && runners());
      expect(runner).toContain('/node_modules/quickjs-emscripten');
      expect(runners()).toHaveLength(1);
      expect(failures).toEqual([]);
    });
  });
});
