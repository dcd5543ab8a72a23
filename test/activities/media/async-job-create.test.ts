/**
 * The create step of asynchronous media jobs when an attempt dies between the provider starting its job and the id
 * being stored (the worker killed, or the provider's answer lost on the way back): the retry adopts the prediction
 * that attempt started instead of starting a second one, never one another job holds, and creates anew when the
 * earlier attempt never reached the provider. Real PostgreSQL (a cloned test database), Replicate played by the
 * simulator; the lost answer is the real engine's create followed by the network error the caller would have seen.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createAsyncJobActivities } from '../../../activities/media/async-job-activities.ts';
import { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import { EngineError, type VideoEngine } from '../../../activities/media/engine.ts';
import { MediaFiles } from '../../../activities/media/files.ts';
import {
  createReplicateVideoEngine,
  defaultReplicateVideoModel,
} from '../../../activities/media/providers/replicate.ts';
import type { AsyncJobInput } from '../../../common/media.ts';
import { openOrm } from '../../../db/orm.ts';
import { openPool, run, type Pool } from '../../../db/pool.ts';
import { startSimulator, type RunningSimulator } from '../../../simulator/server.ts';
import { cloneTestDatabase } from '../../helpers/databases.ts';

let simulator: RunningSimulator;
let database: Awaited<ReturnType<typeof cloneTestDatabase>>;
let orm: MikroORM;
let pool: Pool;

beforeAll(async () => {
  simulator = await startSimulator();
  database = await cloneTestDatabase();
  orm = await openOrm(database.url, { poolMax: 1 });
  pool = openPool(database.url, { max: 2 });
});

afterAll(async () => {
  await pool.end();
  await orm.close();
  await database.drop();
  await simulator.close();
});

const realEngine = () =>
  createReplicateVideoEngine({ baseUrl: simulator.url, apiToken: 'r8_sim', model: defaultReplicateVideoModel });

/** The real engine, whose create starts the prediction and then fails as a lost answer would. */
function losingAnswers(engine: VideoEngine): VideoEngine {
  return {
    ...engine,
    async create(request, options) {
      await engine.create(request, options);
      throw new EngineError('replicate', 'fetch failed: socket hang up', { retryable: true });
    },
  };
}

/** The real engine, whose create fails before the request leaves (the provider never hears of it). */
function failingBeforeSending(engine: VideoEngine): VideoEngine {
  return {
    ...engine,
    async create() {
      throw new EngineError('replicate', 'fetch failed: connect ECONNREFUSED', { retryable: true });
    },
  };
}

function activitiesWith(engine: VideoEngine) {
  return createAsyncJobActivities({
    pool,
    ledger: new CreditLedger(orm, pool),
    media: {
      video: new Map([['replicate', engine]]),
      music: new Map(),
      files: new MediaFiles(join(tmpdir(), 'tessera-async-create')),
    },
  });
}

/** A queued video job's row, as the API writes it. */
async function queuedVideo(prompt: string): Promise<AsyncJobInput> {
  const input: AsyncJobInput = {
    jobId: randomBytes(12).toString('base64url'),
    kind: 'video',
    userId: 'user-create-test',
    prompt,
    durationSeconds: 5,
    mode: 'standard',
    engine: 'replicate',
    credits: 50,
    metered: false,
    pollIntervalMs: 1000,
  };
  await run(
    pool,
    {
      name: 'test-insert-media-job',
      text: `insert into media_jobs (id, kind, user_id, status, engine, request, result, credits, created_at, updated_at)
             values ($1, 'video', $2, 'queued', 'replicate', $3::jsonb, null, 50, now(), now())`,
    },
    [input.jobId, input.userId, JSON.stringify({ prompt, duration: 5, mode: 'standard' })],
  );
  return input;
}

/** The simulator's predictions with this prompt, through Replicate's list. */
async function predictionsFor(prompt: string): Promise<string[]> {
  const ids: string[] = [];
  for (let next: string | null = `${simulator.url}/v1/predictions`; next !== null;) {
    const page = (await (await fetch(next, { headers: { authorization: 'Bearer r8_sim' } })).json()) as {
      next: string | null;
      results: Array<{ id: string; input: { prompt?: string } }>;
    };
    ids.push(...page.results.filter((result) => result.input.prompt === prompt).map((result) => result.id));
    next = page.next;
  }
  return ids;
}

async function providerJobIdOf(jobId: string): Promise<string | undefined> {
  const [row] = await run<{ id: string | null }>(
    pool,
    { name: 'test-provider-job', text: `select result->>'providerJobId' as id from media_jobs where id = $1` },
    [jobId],
  );
  return row?.id ?? undefined;
}

it('adopts the prediction an attempt started but never recorded, creating no second one', async () => {
  const prompt = `lost answer ${randomBytes(4).toString('hex')} [[takes 30s]]`;
  const job = await queuedVideo(prompt);
  await expect(activitiesWith(losingAnswers(realEngine())).createVideoPrediction(job)).rejects.toThrow(/hang up/);
  expect(await providerJobIdOf(job.jobId)).toBeUndefined();
  const [started] = await predictionsFor(prompt);
  expect(started).toBeDefined();

  const retried = await activitiesWith(realEngine()).createVideoPrediction(job);
  expect(retried).toBe(started);
  expect(await predictionsFor(prompt)).toEqual([started]);
  expect(await providerJobIdOf(job.jobId)).toBe(started);
  // And a further retry (the answer to this one lost too) keeps it.
  expect(await activitiesWith(realEngine()).createVideoPrediction(job)).toBe(started);
});

it("never adopts another job's prediction for the same input", async () => {
  const prompt = `same input ${randomBytes(4).toString('hex')} [[takes 30s]]`;
  const first = await queuedVideo(prompt);
  const firstPrediction = await activitiesWith(realEngine()).createVideoPrediction(first);

  const second = await queuedVideo(prompt);
  await expect(activitiesWith(losingAnswers(realEngine())).createVideoPrediction(second)).rejects.toThrow();
  const retried = await activitiesWith(realEngine()).createVideoPrediction(second);
  expect(retried).not.toBe(firstPrediction);
  expect((await predictionsFor(prompt)).sort()).toEqual([firstPrediction, retried].sort());
});

it('creates anew when the earlier attempt never reached the provider', async () => {
  const prompt = `never sent ${randomBytes(4).toString('hex')} [[takes 30s]]`;
  const job = await queuedVideo(prompt);
  await expect(activitiesWith(failingBeforeSending(realEngine())).createVideoPrediction(job)).rejects.toThrow(
    /ECONNREFUSED/,
  );
  expect(await predictionsFor(prompt)).toEqual([]);
  const created = await activitiesWith(realEngine()).createVideoPrediction(job);
  expect(await predictionsFor(prompt)).toEqual([created]);
});
