/**
 * The close of a chat turn: its messages, its status and its last event, written in one transaction, then the event
 * handed to the waiting response. Two steps close turns: the turn's own `finishTurn` (chat-activities.ts), and, for a
 * turn whose last model call answers without asking for a tool, that call itself, in the transaction of its
 * settlement and last journal batch (ProviderCallInput.closeTurn; one local activity and one transaction fewer).
 *
 * Replayed after a crash (the call's transaction committed, its result not yet recorded), the call finds its answer in
 * the journal and closes again: every write here is idempotent (messages and journal rows by position, the status
 * only while running), so the second close changes nothing.
 */
import type { SequencedStreamEvent } from '../../common/completion.ts';
import { addModelCall, turnDoneEvent } from '../../common/turn-totals.ts';
import { agentLabel, agentTurns } from '../agent-metrics.ts';
import type { TurnCloser, TurnClosing } from '../provider-calls.ts';
import type { StreamHub } from '../streaming/stream-hub.ts';
import type { StreamJournal } from '../streaming/stream-journal.ts';
import type { ConversationStore } from './conversation-store.ts';

export function createTurnCloser(dependencies: {
  conversations: ConversationStore;
  journal: StreamJournal;
  hub: StreamHub;
}): TurnCloser {
  const { conversations, journal, hub } = dependencies;
  return {
    async close(client, closing: TurnClosing, call) {
      const totals = addModelCall(closing.totals, call);
      const final = turnDoneEvent(
        { turnId: closing.target.turnId, sessionKey: closing.sessionKey, agent: closing.agentId !== undefined },
        totals,
        call.answer ?? '',
      );
      const last: SequencedStreamEvent = { seq: call.seq, event: final };
      const finished = await conversations.closeTurnOn(client, closing.target, {
        messages: [
          ...closing.messages,
          {
            role: 'assistant',
            content: call.answer,
            toolCalls: [],
            ...(closing.agentId !== undefined ? { agentId: closing.agentId } : {}),
          },
        ],
        firstSeq: closing.firstSeq,
        status: 'done',
        journal: (on) => journal.write(on, closing.target.turnId, [last]),
      });
      return () => turnClosed(hub, closing.target.turnId, last, finished, 'done');
    },
  };
}

/** After a turn's close committed: its agent's turn counted (once, by the close that ended it), its last event out. */
export function turnClosed(
  hub: StreamHub,
  turnId: string,
  last: SequencedStreamEvent,
  finished: { ended: boolean; agentId: string | null },
  status: 'done' | 'failed',
): void {
  if (finished.ended && finished.agentId) agentTurns.inc({ agent: agentLabel(finished.agentId), outcome: status });
  hub.publish(turnId, last);
}
