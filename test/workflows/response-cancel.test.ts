/**
 * A background Response cancelled while it is still queued (no worker has taken it yet): when a worker takes it, no
 * model is called, its hold is lifted, nothing is charged, and its row ends `cancelled`. The response is started on a
 * task queue nobody polls, as a background response waits when every worker is busy, then a worker is started.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { Router } from '../../activities/routing/router.ts';
import { ResponseStore } from '../../activities/responses/response-store.ts';
import { CompletionService } from '../../api/gateway/routes/completions/service.ts';
import { completionWorkflowId, type CompletionResult } from '../../common/completion.ts';
import { loadCatalogue } from '../../config/load-catalogue.ts';
import { loadPlans } from '../../config/load-plans.ts';
import { readSettings } from '../../config/settings.ts';
import { openOrm } from '../../db/orm.ts';
import { cancelResponseSignal } from '../../workflows/completion.workflow.ts';
import { createWorkerDependencies } from '../../worker/create-worker.ts';
import { startWorker } from '../../worker/main.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
const taskQueue = `queued-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  platform = await startTestPlatform();
});

afterAll(async () => {
  await worker?.close();
  await platform?.close();
});

it('ends a background response cancelled while queued without calling a model, its hold lifted', async () => {
  const owner = await platform.createKey();
  const native = await NativeConnection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
  const orm = await openOrm(platform.databaseUrl, { poolMax: 2 });
  const environment = { ...platform.environment, TEMPORAL_TASK_QUEUE: taskQueue };
  const catalogue = loadCatalogue(environment);
  const dependencies = createWorkerDependencies(orm, readSettings(environment), catalogue, loadPlans(environment));
  try {
    const client = new Client({ connection: native });
    const service = new CompletionService({
      client,
      taskQueue,
      router: new Router(catalogue, dependencies.breaker, dependencies.plans),
      ...dependencies,
    });
    const responses = new ResponseStore(dependencies.pool);
    await platform.simulator.resetRequests();
    const principal = {
      userId: owner.user_id,
      keyId: null,
      operator: false,
      plan: 'business' as const,
      customLimits: null,
    };
    const started = await service.start(
      principal,
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Never asked' }], stream: true },
      {
        eager: false,
        idPrefix: 'resp_',
        kind: 'response',
        response: { background: true },
        admit: (reservation) => (reservation ? dependencies.ledger.reserve(reservation) : Promise.resolve(null)),
        admittedWrite: (id) =>
          responses.admitted({
            id,
            userId: owner.user_id,
            status: 'queued',
            background: true,
            stream: false,
            model: 'gpt-4o-mini',
            previousResponseId: null,
            instructions: null,
            request: {},
            inputItems: [],
          }),
      },
    );
    const held = async () =>
      Number(
        (await dependencies.pool.query('select credits_held from users where id = $1', [owner.user_id])).rows[0]
          .credits_held,
      );
    expect(await held()).toBeGreaterThan(0);

    const handle = client.workflow.getHandle(completionWorkflowId(started.requestId));
    await handle.signal(cancelResponseSignal);
    worker = await startWorker(environment);
    const result = (await handle.result()) as CompletionResult;
    expect(result.stopped).toBe(true);

    expect((await responses.get(owner.user_id, started.requestId))?.status).toBe('cancelled');
    expect(await held()).toBe(0);
    const { rows } = await dependencies.pool.query<{ kind: string }>(
      'select kind from credit_ledger where workflow_id = $1 order by id',
      [completionWorkflowId(started.requestId)],
    );
    expect(rows.map((row) => row.kind)).toEqual(['reserve', 'release']);
    expect((await platform.simulator.requests()).total).toBe(0);
  } finally {
    await dependencies.pool.end();
    await orm.close();
    await native.close();
  }
});
