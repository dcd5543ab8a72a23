/**
 * A chat turn whose message the database refuses (issue 16: a NUL wedged a conversation because the turn's first
 * step was retried for ever). The chat activities are the real ones over a conversation store that refuses the
 * message as PostgreSQL does (SQLSTATE 22021); the turn must end failed at once, record the failure, and lift the
 * hold the API took for its first model call.
 */
import { expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createChatActivities } from '../../activities/chat-activities.ts';
import type { ConversationStore } from '../../activities/conversations/conversation-store.ts';
import type { StreamHub } from '../../activities/streaming/stream-hub.ts';
import type { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import type { ChatTurnInput } from '../../common/chat-turn.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';
import { workflowBundle } from '../../worker/create-worker.ts';
import { useWorkerConnection } from '../helpers/temporal.ts';

const workerConnection = useWorkerConnection();

it('ends failed with invalid_request, records the failure and releases the first hold, without retrying', async () => {
  let appendAttempts = 0;
  const finished: Array<{ turnId: string; status: string }> = [];
  const released: Array<{ workflowId: string; attempt: number }> = [];
  const published: unknown[] = [];
  const refused = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
  const conversations = {
    async appendMessages(_target: unknown, messages: Array<{ content: string | null }>) {
      if (messages.length === 0) return;
      appendAttempts++;
      throw refused;
    },
    // The turn's close: its messages (none here), its status and its last event, as one transaction would.
    async closeTurn(
      target: { turnId: string },
      close: { messages: unknown[]; status: string; journal: (client: unknown) => Promise<void> },
    ) {
      if (close.messages.length) throw refused;
      finished.push({ turnId: target.turnId, status: close.status });
      await close.journal(null);
      return { ended: true, agentId: null };
    },
    async turnStatus() {
      return null;
    },
  } as unknown as ConversationStore;
  const journal = {
    writer: () => ({ append: (event: unknown) => published.push(event), close: async () => undefined }),
    write: async (_client: unknown, _turnId: string, events: unknown[]) => {
      published.push(...events);
    },
  } as unknown as StreamJournal;
  const hub = { publish: () => undefined } as unknown as StreamHub;
  const activities = createChatActivities({
    conversations,
    hub,
    journal,
    toolSettings: {} as ToolSettings,
    isRunning: async () => false,
  });
  const taskQueue = `turn-failure-${randomBytes(4).toString('hex')}`;
  const worker = await Worker.create({
    connection: workerConnection(),
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: {
      ...activities,
      releaseCredits: async (input: { workflowId: string; attempt: number }) => {
        released.push({ workflowId: input.workflowId, attempt: input.attempt });
      },
    },
  });
  const turnId = `chat-conv_failure${randomBytes(4).toString('hex')}-1`;
  const input: ChatTurnInput = {
    turnId,
    conversationId: 'conv_failure',
    sessionId: 'ses_failure',
    sessionKey: 'api:failure',
    channel: 'api',
    turn: 1,
    previousTurnId: null,
    message: 'a message the database refuses',
    userId: 'user_failure',
    metered: true,
    requestedModel: 'gpt-4o-mini',
    candidates: [
      {
        model: 'gpt-4o-mini',
        modelId: 'gpt-4o-mini',
        provider: 'openai',
        upstreamModel: 'gpt-4o-mini',
        tier: 'fast',
        price: { input_per_1m: 0.15, output_per_1m: 0.6 },
        probe: false,
        creditRate: 4,
      },
    ],
    stream: false,
    tools: {},
    historyBudgetTokens: 100_000,
    maxToolRounds: 3,
    created: 0,
  };
  const client = new Client({ connection: workerConnection() });
  const failure = await worker
    .runUntil(client.workflow.execute('chatTurn', { taskQueue, workflowId: turnId, args: [input] }))
    .then(
      () => null,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const cause = (failure as WorkflowFailedError).cause as {
    type?: string;
    message?: string;
    cause?: { type?: string };
  };
  const type = cause.type ?? cause.cause?.type;
  expect(type).toBe('invalid_request');
  // Refused once: not retried (each retry would have called the store again).
  expect(appendAttempts).toBe(1);
  expect(finished).toEqual([{ turnId, status: 'failed' }]);
  expect(published).toContainEqual(
    expect.objectContaining({ event: expect.objectContaining({ type: 'turn-error', errorType: 'invalid_request' }) }),
  );
  expect(released).toEqual([{ workflowId: turnId, attempt: 1 }]);
});
