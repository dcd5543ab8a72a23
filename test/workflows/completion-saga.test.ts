/**
 * The completion workflow's credit saga with stub activities: when a provider call could not write the
 * ledger itself, the workflow settles or releases durably through its own steps.
 */
import { expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { CallProviderInput, CallProviderResult } from '../../activities/completion-activities.ts';
import type { Candidate, CompletionInput, CreditSettlement } from '../../common/completion.ts';
import { workflowBundle } from '../../worker/create-worker.ts';
import { useWorkerConnection } from '../helpers/temporal.ts';

const workerConnection = useWorkerConnection();

const candidate = (model: string, provider: string): Candidate => ({
  model,
  modelId: model,
  provider,
  upstreamModel: model,
  tier: 'fast',
  price: { input_per_1m: 0.15, output_per_1m: 0.6 },
  probe: false,
  creditRate: 4,
});

async function runWith(callProvider: (input: CallProviderInput) => Promise<CallProviderResult>) {
  const settled: CreditSettlement[] = [];
  const released: number[] = [];
  const taskQueue = `saga-${randomBytes(4).toString('hex')}`;
  const worker = await Worker.create({
    connection: workerConnection(),
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: {
      callProvider,
      settleCredits: async (input: CreditSettlement) => {
        settled.push(input);
        return { credits: 1 };
      },
      releaseCredits: async (input: { attempt: number }) => {
        released.push(input.attempt);
      },
    },
  });
  const input: CompletionInput = {
    requestId: `chatcmpl-saga${randomBytes(6).toString('hex')}`,
    userId: 'user_saga',
    created: 0,
    request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    candidates: [candidate('gpt-4o-mini', 'openai'), candidate('gemini-2.5-flash', 'google')],
    metered: true,
  };
  const client = new Client({ connection: workerConnection() });
  const result = await worker.runUntil(
    client.workflow.execute('chatCompletion', {
      taskQueue,
      workflowId: `completion-${input.requestId}`,
      args: [input],
    }),
  );
  return { result, settled, released };
}

const success = (model: string, ledgerDone: boolean): CallProviderResult => ({
  outcome: 'succeeded',
  latencyMs: 1,
  finishReason: 'stop',
  usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  usageEstimated: false,
  message: { content: 'ok', toolCalls: [] },
  provider: 'openai',
  model,
  ledgerDone,
});

it('settles through its own step when the call could not, and not otherwise', async () => {
  const fallback = await runWith(async () => success('gpt-4o-mini', false));
  expect(fallback.settled).toEqual([
    expect.objectContaining({
      attempt: 1,
      model: 'gpt-4o-mini',
      creditRate: 4,
      usage: expect.objectContaining({ total_tokens: 12 }),
    }),
  ]);
  const direct = await runWith(async () => success('gpt-4o-mini', true));
  expect(direct.settled).toEqual([]);
});

it('releases a failed attempt the call could not release, then settles the served one at its model', async () => {
  const { settled, released, result } = await runWith(async (input) => {
    if (input.attempt === 1) {
      throw ApplicationFailure.create({
        type: 'ProviderError',
        message: 'openai: HTTP 503',
        nonRetryable: true,
        details: [{ kind: 'http', status: 503, retryable: true, contentSent: false, latencyMs: 1, ledgerDone: false }],
      });
    }
    return success('gemini-2.5-flash', false);
  });
  expect(released).toEqual([1]);
  expect(settled).toEqual([expect.objectContaining({ attempt: 2, model: 'gemini-2.5-flash' })]);
  expect(result).toMatchObject({ model: 'gemini-2.5-flash' });
});
