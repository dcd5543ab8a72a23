/**
 * DeadlineWorker alone, on a tiny real thread (test-thread.ts): a call past its deadline or a crashed thread fails
 * its calls and the next call gets a fresh thread; the work's own exception leaves the thread alive; calls can run
 * one at a time; a warm thread is started ahead of calls and replaced at once; and a replaced thread's late error or
 * exit does not touch its successor. The spins are measured against deadlines with room to spare, so the tests hold
 * on a busy machine.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from '@jest/globals';
import { DeadlineWorker, type DeadlineWorkerOptions } from '../../../activities/threads/deadline-worker.ts';
import { waitFor } from '../../helpers/wait.ts';
import type { TestRequest, TestResponse } from './test-thread.ts';

const messages = { deadline: 'too slow', notStarted: 'no start', stopped: 'stopped', outOfMemory: 'out of memory' };
let threads: DeadlineWorker<TestRequest, TestResponse>[] = [];

function thread(options: Partial<DeadlineWorkerOptions> = {}) {
  const created = new DeadlineWorker<TestRequest, TestResponse>({
    script: new URL('./test-thread.ts', import.meta.url),
    callDeadlineMs: 500,
    startupDeadlineMs: 30_000,
    messages,
    ...options,
  });
  threads.push(created);
  return created;
}

const echo = async (worker: DeadlineWorker<TestRequest, TestResponse>, value = 'hi') => {
  const response = await worker.call({ op: 'echo', value });
  expect(response.value).toBe(value);
  return response.threadId;
};

/** The Worker objects started from now on (Node announces each new thread on a diagnostics channel). */
function watchWorkers(): Worker[] {
  const started: Worker[] = [];
  const onWorker = (message: unknown) => started.push((message as { worker: Worker }).worker);
  subscribe('worker_threads', onWorker);
  cleanups.push(() => unsubscribe('worker_threads', onWorker));
  return started;
}
let cleanups: Array<() => void> = [];

afterEach(() => {
  for (const created of threads) created.close('test over');
  for (const cleanup of cleanups) cleanup();
  threads = [];
  cleanups = [];
});

describe('DeadlineWorker', () => {
  it('answers calls in one thread, which outlives an exception in the work', async () => {
    const worker = thread();
    const first = await echo(worker);
    await expect(worker.call({ op: 'throw', message: 'bad input' })).rejects.toMatchObject({
      kind: 'threw',
      message: 'bad input',
    });
    expect(await echo(worker)).toBe(first);
  });

  it('ends a call past its deadline and starts a fresh thread for the next one', async () => {
    const worker = thread({ callDeadlineMs: 200 });
    const first = await echo(worker);
    await expect(worker.call({ op: 'spin', ms: 60_000 })).rejects.toMatchObject({
      kind: 'deadline',
      message: 'too slow',
    });
    const second = await echo(worker);
    expect(second).not.toBe(first);
    expect(await echo(worker)).toBe(second);
  });

  it('starts a fresh thread after one exits or runs out of its heap', async () => {
    // A deadline long enough for the heap limit to come first.
    const worker = thread({
      callDeadlineMs: 20_000,
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
    });
    const first = await echo(worker);
    await expect(worker.call({ op: 'exit' })).rejects.toMatchObject({ kind: 'stopped', message: 'stopped' });
    const second = await echo(worker);
    expect(second).not.toBe(first);
    await expect(worker.call({ op: 'hog' })).rejects.toMatchObject({ kind: 'stopped', message: 'out of memory' });
    expect(await echo(worker)).not.toBe(second);
  }, 30_000);

  it("ignores a replaced thread's late error and exit: its successor and the call in it go on", async () => {
    const started = watchWorkers();
    const worker = thread({ callDeadlineMs: 2_000 });
    const runaway = worker.call({ op: 'spin', ms: 60_000 });
    // The runaway thread's own listeners, as they are while it runs: Node drops them once it has exited, but an
    // error raised before the termination took hold (a runaway's out-of-memory error) can reach them after the
    // deadline has already replaced the thread.
    expect(started).toHaveLength(1);
    const replaced = { error: started[0]!.listeners('error'), exit: started[0]!.listeners('exit') };
    await expect(runaway).rejects.toMatchObject({ kind: 'deadline' });
    const successor = await echo(worker);
    expect(started).toHaveLength(2);
    const busy = worker.call({ op: 'spin', ms: 100 });
    const lateError = Object.assign(new Error('late out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
    for (const listener of replaced.error) listener.call(started[0], lateError);
    for (const listener of replaced.exit) listener.call(started[0], 1);
    await expect(busy).resolves.toEqual({ threadId: successor, value: 'spun' });
    expect(await echo(worker)).toBe(successor);
    expect(started).toHaveLength(2);
  });

  it('runs calls one at a time when asked, each deadline starting when the call reaches the thread', async () => {
    // Together the three take longer than one deadline; each alone takes well under it.
    const worker = thread({ callDeadlineMs: 3_000, oneAtATime: true });
    await echo(worker);
    const calls = [1, 2, 3].map(() => worker.call({ op: 'spin', ms: 1_500 }));
    for (const call of calls) await expect(call).resolves.toMatchObject({ value: 'spun' });
    // A runaway fails alone: the call queued behind it runs in the fresh thread.
    const runaway = worker.call({ op: 'spin', ms: 60_000 });
    const next = worker.call({ op: 'echo', value: 'after' });
    await expect(runaway).rejects.toMatchObject({ kind: 'deadline' });
    await expect(next).resolves.toMatchObject({ value: 'after' });
  });

  it('keeps a warm thread: started before the first call, and replaced at once after a runaway', async () => {
    const started = watchWorkers();
    const worker = thread({ callDeadlineMs: 500 });
    expect(await worker.warm()).toBe(true);
    expect(started).toHaveLength(1);
    const first = await echo(worker);
    expect(started).toHaveLength(1);
    await expect(worker.call({ op: 'spin', ms: 60_000 })).rejects.toMatchObject({ kind: 'deadline' });
    // The successor starts without waiting for a call, and the next call runs in it.
    await waitFor('a successor thread', async () => started.length === 2);
    const second = await echo(worker);
    expect(second).not.toBe(first);
    expect(started).toHaveLength(2);
    // Closing ends the warm start: nothing replaces a closed thread until a call comes.
    worker.close('test over');
    expect(await echo(worker)).not.toBe(second);
    expect(started).toHaveLength(3);
  });

  it('posts calls at once otherwise: a runaway fails the calls behind it in the thread', async () => {
    const worker = thread({ callDeadlineMs: 200 });
    await echo(worker);
    const runaway = worker.call({ op: 'spin', ms: 60_000 });
    const behind = worker.call({ op: 'echo', value: 'behind' });
    await expect(runaway).rejects.toMatchObject({ kind: 'deadline' });
    await expect(behind).rejects.toMatchObject({ kind: 'deadline' });
    await echo(worker);
  });

  it('drops a cancelled call but keeps its thread; close fails the calls in flight', async () => {
    const worker = thread({ callDeadlineMs: 10_000 });
    const first = await echo(worker);
    const abort = new AbortController();
    const cancelled = worker.call({ op: 'spin', ms: 2_000 }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 50);
    await expect(cancelled).rejects.toMatchObject({ kind: 'cancelled' });
    expect(await echo(worker)).toBe(first);
    await expect(worker.call({ op: 'echo', value: 'x' }, { signal: abort.signal })).rejects.toMatchObject({
      kind: 'cancelled',
    });
    const inFlight = worker.call({ op: 'spin', ms: 5_000 });
    setTimeout(() => worker.close('closed'), 100);
    await expect(inFlight).rejects.toMatchObject({ kind: 'stopped', message: 'closed' });
    expect(await echo(worker)).not.toBe(first);
  });
});
