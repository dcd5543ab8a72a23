/**
 * A tool call's local activity cancelled by Temporal (its run pushed out of the worker's cache, as when the server
 * times out a workflow task on a busy machine; its worker stopping; its deadline) rather than by a person's Stop: the
 * cancellation is not the tool's answer. Nothing is journalled as its result, the activity ends cancelled, and the
 * replayed turn's next attempt runs the tool and records its real result once. (Journalled, the cancellation was
 * read back as the outcome on replay: "code_execute: the call was cancelled", seen in CI under load.)
 */
import { describe, expect, it } from '@jest/globals';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createChatActivities } from '../../activities/chat-activities.ts';
import type { ConversationStore } from '../../activities/conversations/conversation-store.ts';
import type { StreamHub } from '../../activities/streaming/stream-hub.ts';
import type { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';
import type { SequencedStreamEvent } from '../../common/completion.ts';

/** The turn's journal, in memory: what the activity reads back on a later attempt is what an earlier one wrote. */
function memoryJournal(onAppend: (event: SequencedStreamEvent) => void) {
  const events: SequencedStreamEvent[] = [];
  const journal = {
    writer: () => ({
      append: (event: SequencedStreamEvent) => {
        events.push(event);
        onAppend(event);
      },
      close: async () => undefined,
    }),
    read: async (_turnId: string, afterSeq = -1) => events.filter((event) => event.seq > afterSeq),
  } as unknown as StreamJournal;
  return { journal, events };
}

const call = {
  turnId: 'chat-conv_cancel-1',
  conversationId: 'conv_cancel',
  callId: 'call_1',
  name: 'calculator',
  arguments: JSON.stringify({ expression: '6 * 7' }),
  seq: 3,
  stoppable: true,
};

describe('a tool call Temporal cancels', () => {
  it('journals no result and ends cancelled; the next attempt runs the tool and records its answer once', async () => {
    let environment: MockActivityEnvironment | undefined;
    // The cancellation comes while the call is under way: as soon as its start is on the stream.
    const { journal, events } = memoryJournal((event) => {
      if (event.event.type === 'tool-start') environment?.cancel('CANCELLED');
    });
    const activities = createChatActivities({
      conversations: {} as ConversationStore,
      hub: { publish: () => undefined } as unknown as StreamHub,
      journal,
      toolSettings: {} as ToolSettings,
      isRunning: async () => false,
    });

    environment = new MockActivityEnvironment();
    const cancelled = environment.run(activities.runToolCall, call);
    await expect(cancelled).rejects.toBeInstanceOf(CancelledFailure);
    expect(events.map(({ event }) => event.type)).toEqual(['tool-start']);

    // The replayed turn asks again (a fresh activity): the tool runs, its result follows the recorded start.
    environment = new MockActivityEnvironment();
    const answer: { ok: boolean; content: string } = await environment.run(activities.runToolCall, call);
    expect(answer).toMatchObject({ ok: true, nextSeq: 5 });
    expect(JSON.parse(answer.content)).toMatchObject({ result: '42' });
    expect(events.map(({ seq, event }) => [seq, event.type])).toEqual([
      [3, 'tool-start'],
      [4, 'tool-result'],
    ]);
  });
});
