/**
 * The background worker (`npm run worker`) runs completions on its own: what it does for any task whose API
 * process died. Here it is the only worker on its task queue; the workflow is started without eager start.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { Router } from '../../activities/routing/router.ts';
import { CompletionService } from '../../api/gateway/routes/completions/service.ts';
import { loadCatalogue } from '../../config/load-catalogue.ts';
import { loadPlans } from '../../config/load-plans.ts';
import { readSettings } from '../../config/settings.ts';
import { createWorkerDependencies } from '../../worker/create-worker.ts';
import { startWorker } from '../../worker/main.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { completionWorkflowId, type CompletionInput, type CompletionResult } from '../../common/completion.ts';
import { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import { openOrm } from '../../db/orm.ts';

let platform: TestPlatform;
let worker: Awaited<ReturnType<typeof startWorker>>;
let connection: Connection;
const taskQueue = `background-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  platform = await startTestPlatform();
  worker = await startWorker({ ...platform.environment, TEMPORAL_TASK_QUEUE: taskQueue });
  connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
});

afterAll(async () => {
  await connection?.close();
  await worker?.close();
  await platform?.close();
});

const candidate = {
  model: 'gpt-4o-mini',
  provider: 'openai',
  upstreamModel: 'gpt-4o-mini-2024-07-18',
  tier: 'fast',
  price: { input_per_1m: 0.15, output_per_1m: 0.6 },
  probe: false,
};

it('completes a streamed completion, writing its events to the journal', async () => {
  const client = new Client({ connection });
  const requestId = `chatcmpl-bg${randomBytes(8).toString('hex')}`;
  const input: CompletionInput = {
    requestId,
    userId: 'user_background',
    created: Math.floor(Date.now() / 1000),
    request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Nobody is listening' }], stream: true },
    candidates: [candidate],
  };
  const result = await client.workflow.execute<(input: CompletionInput) => Promise<CompletionResult>>(
    'chatCompletion',
    { workflowId: completionWorkflowId(requestId), taskQueue, args: [input] },
  );
  expect(result).toMatchObject({ model: 'gpt-4o-mini', provider: 'openai', finishReason: 'stop', message: null });

  const orm = await openOrm(platform.databaseUrl, { poolMax: 1 });
  try {
    const events = await new StreamJournal(orm).read(requestId);
    expect(events[0]?.event).toEqual({ type: 'model', model: 'gpt-4o-mini' });
    const text = events.flatMap((item) => (item.event.type === 'text-delta' ? [item.event.text] : [])).join('');
    expect(text).toMatch(/Nobody is listening/);
    expect(events.at(-1)?.event.type).toBe('usage');
  } finally {
    await orm.close();
  }
});

it('falls back when eager start is declined: the speculative call is dropped, the worker that got the task answers', async () => {
  // A connection with no worker of its own cannot be granted an eager start.
  const native = await NativeConnection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
  const orm = await openOrm(platform.databaseUrl, { poolMax: 2 });
  let dependencies: ReturnType<typeof createWorkerDependencies> | undefined;
  try {
    const environment = { ...platform.environment, TEMPORAL_TASK_QUEUE: taskQueue };
    const catalogue = loadCatalogue(environment);
    dependencies = createWorkerDependencies(orm, readSettings(environment), catalogue, loadPlans(environment));
    const service = new CompletionService({
      client: new Client({ connection: native }),
      taskQueue,
      router: new Router(catalogue, dependencies.breaker, dependencies.plans),
      ...dependencies,
    });
    const started = await service.start(
      { userId: 'operator', keyId: null, operator: true, plan: 'business', customLimits: null },
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Declined eager start' }] },
      { admit: async () => null },
    );
    expect(started.local).toBe(false);
    expect(dependencies.calls.pendingSpeculative).toBe(0);
    const answer = await service.answer(started);
    expect(answer).toMatchObject({ model: 'gpt-4o-mini', finishReason: 'stop' });
    expect(answer.message?.content).toMatch(/Declined eager start/);
  } finally {
    await dependencies?.pool.end();
    await orm.close();
    await native.close();
  }
});
