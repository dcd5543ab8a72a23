/**
 * `POST /v1/embeddings` through the official `openai` SDK (float and base64), against the simulator: vectors and their
 * ranking, `dimensions`, each embedding model, failover between two providers of the same model (and never to another
 * model unless asked), metering in the ledger, rate limits, bad input refused with nothing charged, the local engine,
 * and the library path (EmbeddingService.embed) from another process, whose vectors come back through the journal.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { defaultCataloguePath, loadCatalogue } from '../../config/load-catalogue.ts';
import { loadPlans } from '../../config/load-plans.ts';
import { openOrm } from '../../db/orm.ts';
import { openPool } from '../../db/pool.ts';
import { CircuitBreaker } from '../../activities/routing/circuit-breaker.ts';
import { CreditLedger } from '../../activities/credits/credit-ledger.ts';
import { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import { EmbeddingHandover } from '../../activities/embeddings/embedding-calls.ts';
import { createEmbeddingService, EmbeddingError } from '../../activities/embeddings/embedding-service.ts';
import type { EmbeddingResult } from '../../common/embeddings.ts';
import { waitFor } from '../helpers/wait.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let client: OpenAI;
let user: { key: string; user_id: string };
let database: pg.Client;
let temporal: Connection;

/**
 * The default catalogue plus a second provider of text-embedding-3-small (an OpenAI-compatible mirror, as an operator
 * would add one), so failover between two providers of one model can be seen.
 */
function catalogueWithMirror(): string {
  const file = parse(readFileSync(defaultCataloguePath, 'utf8')) as {
    providers: unknown[];
    embedding_models: Array<{ id: string; providers?: unknown[] }>;
  };
  file.providers.push({
    id: 'openai-mirror',
    name: 'OpenAI mirror',
    protocol: 'openai',
    env: 'OPENAI_MIRROR',
    base_url: 'https://mirror.invalid/v1',
  });
  file.embedding_models
    .find((model) => model.id === 'text-embedding-3-small')!
    .providers!.push({ provider: 'openai-mirror', upstream_id: 'text-embedding-3-small' });
  const path = join(mkdtempSync(join(tmpdir(), 'tessera-catalogue-')), 'models.yaml');
  writeFileSync(path, stringify(file));
  return path;
}

beforeAll(async () => {
  platform = await startTestPlatform((simulatorUrl) => ({
    MODEL_CATALOGUE_PATH: catalogueWithMirror(),
    OPENAI_MIRROR_API_KEY: 'simulator',
    OPENAI_MIRROR_BASE_URL: `${simulatorUrl}/v1`,
    EMBEDDING_MAX_INPUTS: '64',
    EMBEDDING_MAX_TOKENS: '2000',
  }));
  user = await platform.createKey();
  client = platform.openai(user.key);
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  temporal = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
});

afterAll(async () => {
  await temporal?.close();
  await database?.end();
  await platform?.close();
});

const cosine = (left: number[], right: number[]) => left.reduce((sum, value, index) => sum + value * right[index]!, 0);
const norm = (vector: number[]) => Math.hypot(...vector);

/** The embedding workflow's result (the request's trace), by the response's X-Request-Id. */
async function traceOf(requestId: string): Promise<EmbeddingResult> {
  return new Client({ connection: temporal }).workflow.getHandle(`embedding-${requestId}`).result();
}

async function ledgerOf(requestId: string) {
  const { rows } = await database.query<{ kind: string; amount: number; model: string; prompt_tokens: number | null }>(
    `select kind, amount, model, prompt_tokens from credit_ledger where workflow_id = $1 order by id`,
    [`embedding-${requestId}`],
  );
  return rows;
}

async function apiError(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (failure: unknown) => failure,
  );
  if (!(error instanceof OpenAI.APIError)) throw new Error(`expected an API error, got ${String(error)}`);
  return error as InstanceType<typeof OpenAI.APIError> & { error: { type: string; param?: string } };
}

describe('embeddings through the SDK', () => {
  it('answers float and base64 alike (the SDK asks for base64 by default and decodes it)', async () => {
    const texts = ['The contract ends with notice.', 'Bananas are yellow.'];
    const { data: viaBase64, response } = await client.embeddings
      .create({ model: 'text-embedding-3-small', input: texts })
      .withResponse();
    const floats = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: texts,
      encoding_format: 'float',
    });
    expect(viaBase64.object).toBe('list');
    expect(viaBase64.model).toBe('text-embedding-3-small');
    expect(viaBase64.data.map((item) => item.index)).toEqual([0, 1]);
    expect(viaBase64.data[0]!.embedding).toHaveLength(1536);
    expect(norm(viaBase64.data[0]!.embedding)).toBeCloseTo(1, 5);
    expect(floats.data[1]!.embedding).toEqual(viaBase64.data[1]!.embedding);
    expect(viaBase64.usage.prompt_tokens).toBeGreaterThan(0);
    expect(viaBase64.usage.total_tokens).toBe(viaBase64.usage.prompt_tokens);
    // The raw wire: base64 little-endian float32, as OpenAI sends it.
    const raw = (await (
      await platform.fetch('/v1/embeddings', {
        method: 'POST',
        key: user.key,
        body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'base64' }),
      })
    ).json()) as { data: Array<{ embedding: string }> };
    expect(Buffer.from(raw.data[0]!.embedding, 'base64').length).toBe(1536 * 4);
    expect(response.headers.get('x-request-id')).toMatch(/^emb-/);
  });

  it('ranks texts that share words with the query above those that do not', async () => {
    const documents = [
      'Either party may terminate the contract with thirty days written notice.',
      'Bananas are a yellow fruit rich in potassium.',
      'The weather tomorrow will be sunny with light wind.',
      'The contract is governed by the laws of Japan.',
    ];
    const { data } = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: ['What notice does the contract need for termination?', ...documents],
    });
    const scores = documents.map((_, index) => cosine(data[0]!.embedding, data[index + 1]!.embedding));
    const ranking = scores.map((score, index) => ({ score, index })).sort((left, right) => right.score - left.score);
    expect(ranking.map((entry) => entry.index)).toEqual([0, 3, expect.any(Number), expect.any(Number)]);
    expect(ranking[0]!.score).toBeGreaterThan(ranking[2]!.score + 0.2);
  });

  it('shortens vectors with `dimensions`, on OpenAI and Gemini models alike, each still of length 1', async () => {
    for (const model of ['text-embedding-3-large', 'gemini-embedding-001']) {
      const { data } = await client.embeddings.create({ model, input: 'a short text', dimensions: 256 });
      expect(data[0]!.embedding).toHaveLength(256);
      expect(norm(data[0]!.embedding)).toBeCloseTo(1, 4);
    }
    const full = await client.embeddings.create({ model: 'gemini-embedding-001', input: 'x' });
    expect(full.data[0]!.embedding).toHaveLength(3072);
  });

  it('embeds with the local engine: 512 dimensions, meaning rather than shared words', async () => {
    const { data, model } = await client.embeddings.create({
      model: 'local-embedding',
      input: ['kitten resting on a rug', 'The cat sat on the mat.', 'Interest rates were raised by the central bank.'],
    });
    expect(model).toBe('local-embedding');
    expect(data[0]!.embedding).toHaveLength(512);
    expect(norm(data[0]!.embedding)).toBeCloseTo(1, 3);
    // No word in common, yet the cat is far closer to the kitten than the bank is.
    expect(cosine(data[0]!.embedding, data[1]!.embedding)).toBeGreaterThan(
      cosine(data[0]!.embedding, data[2]!.embedding) + 0.2,
    );
  });
});

describe('models', () => {
  it('lists the embedding models apart, with their type and dimensions; the chat list stays the 12', async () => {
    const embedding = (await (await platform.fetch('/v1/models?type=embedding')).json()) as {
      data: Array<{ id: string; type: string; dimensions: number; owned_by: string }>;
    };
    expect(embedding.data.map((model) => model.id)).toEqual([
      'text-embedding-3-small',
      'text-embedding-3-large',
      'gemini-embedding-001',
      'local-embedding',
    ]);
    expect(embedding.data.every((model) => model.type === 'embedding')).toBe(true);
    expect(embedding.data.find((model) => model.id === 'local-embedding')).toMatchObject({
      dimensions: 512,
      owned_by: 'tessera',
    });
    const chat = (await (await platform.fetch('/v1/models')).json()) as { data: Array<{ id: string }> };
    expect(chat.data).toHaveLength(12);
    expect(await client.models.retrieve('text-embedding-3-large')).toMatchObject({
      id: 'text-embedding-3-large',
      owned_by: 'openai',
      type: 'embedding',
      dimensions: 3072,
    });
    const pricing = (await (await platform.fetch('/v1/models/pricing')).json()) as {
      embedding_models: Record<string, { input_per_1m: number }>;
    };
    expect(pricing.embedding_models['text-embedding-3-small']).toEqual({ input_per_1m: 0.02 });
    const plans = (await (await platform.fetch('/api/v1/plans')).json()) as { credit_rates: Record<string, number> };
    expect(plans.credit_rates['text-embedding-3-small']).toBeCloseTo(0.0533, 3);
    expect(plans.credit_rates['local-embedding']).toBe(0);
  });
});

describe('failover', () => {
  it('moves to the other provider of the same model when the first fails, silently', async () => {
    await platform.simulator.resetRequests();
    await platform.simulator.addFault({
      match: { model: 'text-embedding-3-small', protocol: 'openai' },
      times: 1,
      fault: { status: 503 },
    });
    const { data, response } = await client.embeddings
      .create({ model: 'text-embedding-3-small', input: 'failover please' })
      .withResponse();
    expect(data.model).toBe('text-embedding-3-small');
    expect(data.data[0]!.embedding).toHaveLength(1536);
    const trace = await traceOf(response.headers.get('x-request-id')!);
    expect(trace.attempts.map((attempt) => [attempt.provider, attempt.outcome])).toEqual([
      ['openai', 'failed'],
      ['openai-mirror', 'succeeded'],
    ]);
    expect((await platform.simulator.requests()).by_model['text-embedding-3-small']).toBe(2);
  });

  it('never falls back to another model unasked: every provider failing is a 502', async () => {
    await platform.simulator.addFault({
      match: { model: 'text-embedding-3-small', protocol: 'openai' },
      times: 2,
      fault: { status: 500 },
    });
    const error = await apiError(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    expect(error.status).toBe(502);
    expect(error.error.type).toBe('upstream_error');
    expect(error.message).toContain('openai-mirror');
  });

  it('falls back to a model the caller names in fallback_models, and says which served', async () => {
    await platform.simulator.addFault({
      match: { model: 'text-embedding-3-small', protocol: 'openai' },
      times: 2,
      fault: { status: 500 },
    });
    const response = await platform.fetch('/v1/embeddings', {
      method: 'POST',
      key: user.key,
      body: JSON.stringify({
        model: 'text-embedding-3-small',
        input: 'x',
        encoding_format: 'float',
        fallback_models: ['local-embedding'],
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { model: string; data: Array<{ embedding: number[] }> };
    expect(body.model).toBe('local-embedding');
    expect(body.data[0]!.embedding).toHaveLength(512);
  });

  it('does not fail over on the caller’s own bad request (the provider’s 400)', async () => {
    await platform.simulator.addFault({ match: { model: 'text-embedding-3-small' }, times: 1, fault: { status: 400 } });
    const error = await apiError(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    expect(error.status).toBe(400);
    await platform.simulator.clearFaults();
  });
});

describe('metering and limits', () => {
  it('holds, then charges the usage at the model’s rate, once; nothing stays held', async () => {
    const { data, response } = await client.embeddings
      .create({ model: 'text-embedding-3-small', input: ['one text to charge', 'and another'] })
      .withResponse();
    // The vectors are handed over before the attempt's settlement is written: wait for it, then check it is the one.
    const requestId = response.headers.get('x-request-id')!;
    const ledger = await waitFor('the settlement', async () => {
      const rows = await ledgerOf(requestId);
      return rows.some((row) => row.kind === 'settle') && rows;
    });
    expect(ledger.map((row) => row.kind)).toEqual(['reserve', 'settle']);
    // 0.053 credits per 1,000 tokens: any small request costs the minimum, 1 credit.
    expect(ledger[1]).toMatchObject({
      amount: 1,
      model: 'text-embedding-3-small',
      prompt_tokens: data.usage.prompt_tokens,
    });
    const { rows } = await database.query('select * from credit_holds where user_id = $1', [user.user_id]);
    expect(rows).toHaveLength(0);
  });

  it('refuses past the rate limit with 429 and Retry-After', async () => {
    const limited = await platform.createKey();
    await database.query(`update users set custom_limits = $1 where id = $2`, [
      JSON.stringify({ per_hour: 2, per_day: null }),
      limited.user_id,
    ]);
    const limitedClient = platform.openai(limited.key);
    for (let index = 0; index < 2; index++) {
      await limitedClient.embeddings.create({ model: 'text-embedding-3-small', input: 'x' });
    }
    const error = await apiError(limitedClient.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    expect(error.status).toBe(429);
    expect(error.error.type).toBe('rate_limit_exceeded');
    expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
  });

  it('refuses a model outside the plan (403) and an account without credits (402), charging nothing', async () => {
    const free = await platform.createKey(undefined, 'free');
    const freeClient = platform.openai(free.key);
    const refused = await apiError(freeClient.embeddings.create({ model: 'text-embedding-3-large', input: 'x' }));
    expect(refused.status).toBe(403);
    await database.query(
      `insert into credit_ledger (key, user_id, kind, amount, created_at)
       select 'drain:' || $1, $1, 'adjust', -credits_balance, now() from users where id = $1`,
      [free.user_id],
    );
    await database.query(`update users set credits_balance = 0 where id = $1`, [free.user_id]);
    const poor = await apiError(freeClient.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    expect(poor.status).toBe(402);
    const { rows } = await database.query(`select 1 from credit_ledger where user_id = $1 and kind = 'reserve'`, [
      free.user_id,
    ]);
    expect(rows).toHaveLength(0);
  });
});

describe('bad input', () => {
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['no model', { input: 'x' }, 400, 'model'],
    ['no input', { model: 'text-embedding-3-small' }, 400, 'input'],
    ['an empty list', { model: 'text-embedding-3-small', input: [] }, 400, 'input'],
    ['an empty text', { model: 'text-embedding-3-small', input: ['fine', ''] }, 400, 'input.1'],
    ['token arrays', { model: 'text-embedding-3-small', input: [1, 2, 3] }, 400, 'input'],
    ['too many inputs', { model: 'text-embedding-3-small', input: Array(65).fill('x') }, 400, 'input'],
    ['too many tokens', { model: 'text-embedding-3-small', input: Array(60).fill('word '.repeat(40)) }, 400, 'input'],
    ['an input past the model', { model: 'local-embedding', input: ['word '.repeat(1100)] }, 400, 'input.0'],
    ['dimensions past the model', { model: 'text-embedding-3-small', input: 'x', dimensions: 4096 }, 400, 'dimensions'],
    ['dimensions on a fixed model', { model: 'local-embedding', input: 'x', dimensions: 128 }, 400, 'dimensions'],
    [
      'a bad encoding',
      { model: 'text-embedding-3-small', input: 'x', encoding_format: 'int8' },
      400,
      'encoding_format',
    ],
    ['a chat model', { model: 'gpt-4o', input: 'x' }, 400, 'model'],
    ['an unknown model', { model: 'text-embedding-9', input: 'x' }, 404, 'model'],
    [
      'an unknown fallback',
      { model: 'local-embedding', input: 'x', fallback_models: ['nope'] },
      404,
      'fallback_models',
    ],
  ];

  it.each(cases)('refuses %s, naming the field, and charges nothing', async (_name, body, status, param) => {
    const before = await database.query('select count(*)::int as n from credit_ledger where user_id = $1', [
      user.user_id,
    ]);
    const response = await platform.fetch('/v1/embeddings', {
      method: 'POST',
      key: user.key,
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(status);
    const { error } = (await response.json()) as { error: { type: string; message: string; param?: string } };
    expect(error.param).toBe(param);
    expect(error.message.length).toBeGreaterThan(0);
    const after = await database.query('select count(*)::int as n from credit_ledger where user_id = $1', [
      user.user_id,
    ]);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('wants a key', async () => {
    const response = await platform.fetch('/v1/embeddings', {
      method: 'POST',
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
    });
    expect(response.status).toBe(401);
  });
});

describe('the library path (EmbeddingService.embed), as RAG calls it', () => {
  it('embeds from a process whose workflow runs elsewhere: the vectors come back through the journal', async () => {
    // A service in this test process, on a worker connection but with no worker polling the task queue here: eager
    // start finds none, and the workflow runs on the platform's worker.
    const environment = platform.environment;
    const native = await NativeConnection.connect({ address: environment.TEMPORAL_ADDRESS! });
    const orm = await openOrm(platform.databaseUrl);
    const pool = openPool(platform.databaseUrl);
    try {
      const catalogue = loadCatalogue(environment);
      const plans = loadPlans(environment);
      const breaker = new CircuitBreaker(orm, { failureThreshold: 5, cooldownMs: 30_000 });
      const journal = new StreamJournal(orm);
      const service = createEmbeddingService({
        client: new Client({ connection: native }),
        settings: {
          TEMPORAL_TASK_QUEUE: environment.TEMPORAL_TASK_QUEUE!,
          EMBEDDING_MODEL: undefined,
          EMBEDDING_MAX_INPUTS: 64,
          EMBEDDING_MAX_TOKENS: 10_000,
        },
        catalogue,
        dependencies: {
          breaker,
          plans,
          ledger: new CreditLedger(orm, pool),
          embeddingHandover: new EmbeddingHandover(),
          journal,
          pool,
        },
      });
      // With keys for every provider, the default is the first catalogue model.
      expect(service.defaultModel()).toEqual({ id: 'text-embedding-3-small', dimensions: 1536 });
      const embedded = await service.embed({
        userId: user.user_id,
        texts: ['termination of the contract', 'yellow bananas'],
        dimensions: 64,
      });
      expect(embedded).toMatchObject({ model: 'text-embedding-3-small', provider: 'openai', dimensions: 64 });
      expect(embedded.vectors).toHaveLength(2);
      expect(embedded.vectors[0]).toBeInstanceOf(Float32Array);
      expect(embedded.vectors[1]!.length).toBe(64);
      // The same text through HTTP gives the same vector.
      const viaHttp = await client.embeddings.create({
        model: 'text-embedding-3-small',
        input: 'yellow bananas',
        dimensions: 64,
      });
      expect(Array.from(embedded.vectors[1]!)).toEqual(viaHttp.data[0]!.embedding);
      // Read once, then deleted from the journal.
      const { rows } = await database.query('select 1 from stream_chunks where request_id = $1', [embedded.requestId]);
      expect(rows).toHaveLength(0);
      expect(await ledgerOf(embedded.requestId)).toEqual([
        expect.objectContaining({ kind: 'reserve' }),
        expect.objectContaining({ kind: 'settle', amount: 1 }),
      ]);
      const refused = await service
        .embed({ userId: user.user_id, model: 'gpt-4o', texts: ['x'] })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(EmbeddingError);
      expect(refused).toMatchObject({ type: 'invalid_request', param: 'model' });
    } finally {
      await native.close();
      await pool.end();
      await orm.close();
    }
  });
});
