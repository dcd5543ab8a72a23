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

describe('tool engines', () => {
  it('are not loaded when the worker starts unless ENGINES_WARM_AT_START names them', async () => {
    const threads: unknown[] = [];
    const onThread = (message: unknown) => threads.push(message);
    subscribe('worker_threads', onThread);
    const failures: string[] = [];
    try {
      warmToolEngines(testToolSettings({ sandboxRoot: root, sandboxQuotaBytes: 1024 * 1024 }), (tool, error) =>
        failures.push(`${tool}: ${String(error)}`),
      );
      // A thread or a runner is created synchronously when an engine starts, so a turn of the event loop is enough
      // to know that none did.
      await new Promise((resolve) => setImmediate(resolve));
      const ours = `--allow-fs-write=${path.join(await realpath(root), '.runners')}/`;
      expect(threads).toEqual([]);
      expect(children().filter((command) => command.includes(ours))).toEqual([]);
      expect(failures).toEqual([]);
    } finally {
      unsubscribe('worker_threads', onThread);
    }
  });

  it('named in ENGINES_WARM_AT_START start when the worker starts, before any call', async () => {
    const threads: unknown[] = [];
    const onThread = (message: unknown) => threads.push(message);
    subscribe('worker_threads', onThread);
    const failures: string[] = [];
    try {
      warmToolEngines(
        testToolSettings({
          sandboxRoot: root,
          sandboxQuotaBytes: 1024 * 1024,
          enginesWarmAtStart: ['calculator', 'javascript'],
        }),
        (tool, error) => failures.push(`${tool}: ${String(error)}`),
      );
      // The calculator's evaluator thread.
      await waitFor('the calculator thread', async () => threads.length >= 1);
      // A JavaScript runner, waiting for a call with a staging directory of its own (Python, not named, starts with
      // its first call). Only runners of this test's sandbox root count: the same Jest worker may have run other test files.
      const ours = `--allow-fs-write=${path.join(await realpath(root), '.runners')}/`;
      const runners = () => children().filter((command) => command.includes(ours));
      const [runner] = await waitFor('a waiting runner', async () => runners().length > 0 && runners());
      expect(runner).toContain('/node_modules/quickjs-emscripten');
      expect(runners()).toHaveLength(1);
      expect(failures).toEqual([]);
    } finally {
      unsubscribe('worker_threads', onThread);
    }
  });
});
