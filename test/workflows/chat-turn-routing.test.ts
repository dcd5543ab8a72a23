/**
 * A turn that routes its message (issue 21) when the process running it does not serve the agent service (the
 * background worker): the turn's `routeMessage` local activity answers `RouteElsewhere`, and the turn runs the step
 * on the agent service's task queue instead, then goes on as the routed agent's turn (its model, its first call the
 * attempt the step held), or ends with the refusal the step came back with. The chat activities are the real ones
 * over stores that record what they are asked; the agent service's side is a worker on its own task queue.
 */
import { expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createChatActivities } from '../../activities/chat-activities.ts';
import type { CallProviderInput } from '../../activities/completion-activities.ts';
import type { ConversationStore } from '../../activities/conversations/conversation-store.ts';
import type { StreamHub } from '../../activities/streaming/stream-hub.ts';
import type { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';
import type { ChatTurnInput, RouteMessageInput, RouteMessageResult } from '../../common/chat-turn.ts';
import type { Candidate } from '../../common/completion.ts';
import { workflowBundle } from '../../worker/create-worker.ts';
import { useWorkerConnection } from '../helpers/temporal.ts';

const workerConnection = useWorkerConnection();

const candidate: Candidate = {
  model: 'claude-sonnet-4-6',
  modelId: 'claude-sonnet-4-6',
  provider: 'anthropic',
  upstreamModel: 'claude-sonnet-4-6',
  tier: 'smart',
  price: { input_per_1m: 3, output_per_1m: 15 },
  probe: false,
  creditRate: 10,
};

/** Runs a routed turn on a worker without the agent service, beside the agent service's queue answering `answer`. */
async function runRouted(answer: (input: RouteMessageInput) => RouteMessageResult) {
  const id = randomBytes(4).toString('hex');
  const routedOn: RouteMessageInput[] = [];
  const calls: CallProviderInput[] = [];
  const closed: Array<{ status: string }> = [];
  const journalled: Array<{ seq: number; event: { type: string } }> = [];
  const conversations = {
    async turnStatus() {
      return null;
    },
    async history() {
      return [];
    },
    async closeTurn(_target: unknown, close: { status: string; journal: (client: unknown) => Promise<void> }) {
      closed.push({ status: close.status });
      await close.journal(null);
      return { ended: true, agentId: null };
    },
  } as unknown as ConversationStore;
  const journal = {
    write: async (_client: unknown, _turnId: string, events: Array<{ seq: number; event: { type: string } }>) => {
      journalled.push(...events);
    },
  } as unknown as StreamJournal;
  const hub = { publish: () => undefined } as unknown as StreamHub;
  // The background worker's activities: no agent routing here.
  const activities = createChatActivities({
    conversations,
    hub,
    journal,
    toolSettings: {} as ToolSettings,
    isRunning: async () => false,
  });
  const taskQueue = `turn-routing-${id}`;
  const agentsQueue = `${taskQueue}-agents`;
  const turnWorker = await Worker.create({
    connection: workerConnection(),
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: {
      ...activities,
      callProvider: async (input: CallProviderInput) => {
        calls.push(input);
        return {
          outcome: 'succeeded',
          latencyMs: 5,
          finishReason: 'stop',
          usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
          usageEstimated: false,
          message: { content: 'Bonjour', toolCalls: [] },
          nextSeq: (input.seqBase ?? 0) + 3,
          ledgerDone: true,
          provider: input.candidate.provider,
          model: input.candidate.model,
        };
      },
      releaseCredits: async () => undefined,
    },
  });
  const agentsWorker = await Worker.create({
    connection: workerConnection(),
    taskQueue: agentsQueue,
    activities: {
      routeMessage: async (input: RouteMessageInput) => {
        routedOn.push(input);
        return answer(input);
      },
    },
  });
  const turnId = `chat-conv_routing${id}-1`;
  const input: ChatTurnInput = {
    turnId,
    conversationId: `conv_routing${id}`,
    sessionId: 'ses_routing',
    sessionKey: 'web:routing',
    channel: 'web',
    turn: 1,
    previousTurnId: null,
    message: 'Translate good morning into French',
    userId: 'user_routing',
    metered: true,
    requestedModel: 'auto',
    candidates: [],
    stream: true,
    tools: {},
    historyBudgetTokens: 0,
    maxToolRounds: 3,
    created: 0,
    owner: 'user:user_routing',
    memories: { userId: 'user_routing', limit: 5 },
    approvalTimeoutMs: 60_000,
    opened: true,
    routing: {
      candidates: [
        { id: 'writer', name: 'Writer', description: 'Writes', keywords: ['write'] },
        { id: 'translator', name: 'Translator', description: 'Translates', keywords: ['translate'] },
      ],
      classifier: { model: 'gpt-4o-mini', candidates: [{ ...candidate, model: 'gpt-4o-mini', creditRate: 1 }] },
      taskQueue: agentsQueue,
      request: {},
      principal: { userId: 'user_routing', keyId: null, operator: false, plan: 'business', customLimits: null },
    },
  };
  const client = new Client({ connection: workerConnection() });
  const outcome = await turnWorker.runUntil(
    agentsWorker.runUntil(async () => {
      const ran = await client.workflow.execute('chatTurn', { taskQueue, workflowId: turnId, args: [input] }).then(
        (result: unknown) => ({ result, error: null }),
        (error: unknown) => ({ result: null, error }),
      );
      // Read while the turn's worker runs (a query of a closed workflow is answered by replaying it there).
      const handle = client.workflow.getHandle(turnId);
      const trace = await handle.query<{ routing?: unknown }>('trace');
      const { searchAttributes } = await handle.describe();
      return { ...ran, trace, searchAttributes };
    }),
  );
  return { ...outcome, routedOn, calls, closed, journalled, turnId };
}

const routing = {
  routed: { id: 'translator', name: 'Translator', confidence: 0.93, method: 'model' as const },
  routing: {
    scores: { writer: 1, translator: 9 },
    call: {
      model: 'gpt-4o-mini',
      provider: 'openai',
      usage: { prompt_tokens: 80, completion_tokens: 12, total_tokens: 92 },
      credits: 1,
      costUsd: 0.00002,
      latencyMs: 3,
    },
  },
  firstAttempt: 2,
};

it('routes on the agent service’s queue when its worker cannot, then answers as the routed agent', async () => {
  const run = await runRouted(() => ({
    ...routing,
    setup: {
      requestedModel: 'claude-sonnet-4-6',
      candidates: [candidate],
      tools: {},
      historyBudgetTokens: 100_000,
      agent: { ...routing.routed, systemPrompt: 'You translate.' },
    },
  }));
  expect(run.error).toBeNull();
  expect(run.result).toMatchObject({ response: 'Bonjour', model: 'claude-sonnet-4-6' });
  expect(run.routedOn).toHaveLength(1);
  expect(run.routedOn[0]).toMatchObject({ turnId: run.turnId, message: 'Translate good morning into French' });
  // The routed agent's first call is attempt 2 (the classifier's was 1), its hold the one the step took.
  expect(run.calls).toHaveLength(1);
  expect(run.calls[0]).toMatchObject({ attempt: 2, heldAttempt: 2, candidate: { model: 'claude-sonnet-4-6' } });
  expect(run.calls[0]!.request.messages[0]).toMatchObject({ role: 'system', content: 'You translate.' });
  expect(run.closed).toEqual([{ status: 'done' }]);
  // The trace keeps the routing decision and what its call cost; the turn is found under its routed agent's model.
  expect(run.trace.routing).toMatchObject({
    id: 'translator',
    method: 'model',
    scores: { translator: 9 },
    call: { model: 'gpt-4o-mini', credits: 1 },
  });
  expect(run.searchAttributes.TesseraModel).toEqual(['claude-sonnet-4-6']);
});

it('ends with the routed agent’s refusal, carrying the Google login it needs, without a model call', async () => {
  const run = await runRouted(() => ({
    ...routing,
    refusal: {
      errorType: 'permission_denied',
      message: 'The Mail agent works with your Google mail: log in with Google',
      login: { agent: 'Mail', workspace: 'mail' },
    },
  }));
  expect(run.error).toBeInstanceOf(WorkflowFailedError);
  expect(run.calls).toEqual([]);
  expect(run.closed).toEqual([{ status: 'failed' }]);
  expect(run.journalled.at(-1)?.event).toMatchObject({
    type: 'turn-error',
    errorType: 'permission_denied',
    login: { agent: 'Mail', workspace: 'mail' },
  });
});
