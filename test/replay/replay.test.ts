/**
 * Replays committed workflow histories against today's workflow code: a change that would break running
 * completions fails here. Regenerate with `node test/replay/capture-histories.ts` after an intended change
 * (and keep the old files while such workflows may still be running).
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { workflowBundle } from '../../worker/create-worker.ts';

const directory = new URL('./histories/', import.meta.url);
const files = readdirSync(directory).filter((file) => file.endsWith('.json'));

const load = (file: string) => historyFromJSON(JSON.parse(readFileSync(new URL(file, directory), 'utf8')));

describe('workflow replay', () => {
  it('has committed histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(3);
  });

  it.each(files)('replays %s deterministically', async (file) => {
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, load(file), file);
  });

  it('rejects a tampered history', async () => {
    const history = load(files.find((file) => file.includes('failover'))!);
    // Drop the recorded outcome of the first provider call: the code would now issue a command the history lacks.
    const events = history.events!;
    const firstMarker = events.findIndex((event) => event.markerRecordedEventAttributes);
    const tampered = { ...history, events: events.filter((_, index) => index !== firstMarker + 1 || !events[index]?.markerRecordedEventAttributes) };
    tampered.events = tampered.events.map((event) => event);
    const markers = tampered.events.filter((event) => event.markerRecordedEventAttributes).length;
    expect(markers).toBeLessThan(events.filter((event) => event.markerRecordedEventAttributes).length);
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, tampered, 'tampered')).rejects.toThrow();
  });
});
