/**
 * Replays committed workflow histories against today's workflow code: a change that would break running
 * completions fails here. Regenerate with `node test/replay/capture-histories.ts` after an intended change
 * (and keep the old files while such workflows may still be running).
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { installTemporalRuntime, workflowBundle } from '../../worker/create-worker.ts';

installTemporalRuntime('ERROR');

const directory = new URL('./histories/', import.meta.url);
const files = readdirSync(directory).filter((file) => file.endsWith('.json'));

interface HistoryJson {
  events: Array<{ eventId: string; eventType: string }>;
}
const read = (file: string) => JSON.parse(readFileSync(new URL(file, directory), 'utf8')) as HistoryJson;
const load = (file: string) => historyFromJSON(read(file));

describe('workflow replay', () => {
  it('has committed histories to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(3);
  });

  it.each(files)('replays %s deterministically', async (file) => {
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, load(file), file);
  });

  it('rejects a tampered history', async () => {
    const history = read(files.find((file) => file.includes('failover'))!);
    // Remove the first provider call's recorded outcome (and renumber): the code now meets the second
    // attempt's marker where it expects the first, which must fail as nondeterminism, not replay quietly.
    const markers = history.events.flatMap((event, index) =>
      event.eventType === 'EVENT_TYPE_MARKER_RECORDED' ? [index] : [],
    );
    expect(markers.length).toBeGreaterThanOrEqual(2);
    const events = history.events
      .filter((_event, index) => index !== markers[0])
      .map((event, index) => ({ ...event, eventId: String(index + 1) }));
    const tampered = historyFromJSON({ ...history, events });
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, tampered, 'tampered'),
    ).rejects.toThrow(/[Nn]ondetermin/);
  });
});
