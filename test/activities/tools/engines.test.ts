/**
 * Tool engines start ahead of calls (`warmToolEngines`, which every process that runs turns calls when its worker
 * starts): the calculator's thread and a JavaScript runner are running and waiting before any call comes.
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
  it('start when the worker starts, before any call', async () => {
    const threads: unknown[] = [];
    const onThread = (message: unknown) => threads.push(message);
    subscribe('worker_threads', onThread);
    const failures: string[] = [];
    try {
      warmToolEngines(testToolSettings({ sandboxRoot: root, sandboxQuotaBytes: 1024 * 1024 }), (tool, error) =>
        failures.push(`${tool}: ${String(error)}`),
      );
      // The calculator's evaluator thread.
      await waitFor('the calculator thread', async () => threads.length >= 1);
      // A JavaScript runner, waiting for a call with a staging directory of its own (Python's starts with its first
      // call). Only runners of this test's sandbox root count: the same Jest worker may have run other test files.
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
