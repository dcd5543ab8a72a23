/**
 * Failover and the circuit breaker, end to end: simulator faults on the requested model's upstream id,
 * requests through the official SDK, traces read back through the API.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import pg from 'pg';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const fastTier = ['claude-haiku-4-5', 'gpt-4o-mini', 'gemini-2.5-flash', 'deepseek-chat', 'llama-3.3-70b-versatile'];
const upstream = { 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18', 'gpt-4o': 'gpt-4o-2024-11-20' } as const;

let platform: TestPlatform;
let client: OpenAI;
let apiKey: string;

interface Trace {
  status: string;
  usage_estimated?: boolean;
  model?: string;
  attempts: Array<{
    model: string;
    provider: string;
    outcome: string;
    status?: number;
    error?: string;
    latency_ms: number;
  }>;
}

/** The request's trace once its workflow has closed (answers are released a moment before that). */
const trace = async (id: string) => {
  for (let poll = 0; ; poll++) {
    const record = (await (await platform.fetch(`/api/v1/requests/${id}`, { key: apiKey })).json()) as Trace;
    if (record.status !== 'running' || poll >= 50) return record;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
const ask = (model: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Tell me something' }], ...extra });

beforeAll(async () => {
  platform = await startTestPlatform((simulatorUrl) => ({
    // Small limits so faults trip quickly; the breaker opens after 3 consecutive failures.
    PROVIDER_CONNECT_TIMEOUT_MS: '800',
    PROVIDER_IDLE_TIMEOUT_MS: '800',
    BREAKER_FAILURE_THRESHOLD: '3',
    BREAKER_COOLDOWN_MS: '1500',
    BREAKER_SNAPSHOT_TTL_MS: '0',
    // The simulator also plays a self-hosted OpenAI-compatible server (think Ollama) under its own model name.
    SELF_HOSTED_BASE_URL: `${simulatorUrl}/v1`,
    SELF_HOSTED_MODEL: 'llama3.1-local',
  }));
  apiKey = (await platform.createKey()).key;
  client = platform.openai(apiKey);
});

afterEach(async () => {
  await platform.simulator.clearFaults();
  // Each test starts with every breaker closed.
  const database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  await database.query('delete from provider_breakers');
  await database.end();
});

afterAll(async () => {
  await platform?.close();
});

describe.each([
  ['429 with Retry-After', { status: 429, retry_after: 7 }, 429],
  ['500', { status: 500 }, 500],
  ['401 from upstream (our key)', { status: 401 }, 401],
  ['latency beyond the connect timeout', { latency_ms: 2000 }, undefined],
  ['a malformed body', { malformed_after_tokens: 0 }, undefined],
  ['a cut connection', { cut_after_tokens: 0 }, undefined],
])('non-streamed failover on %s', (_name, fault, status) => {
  it('serves from another model of the same tier and records the failed attempt', async () => {
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o-mini'] }, fault });
    const completion = await ask('gpt-4o-mini');
    expect(completion.model).not.toBe('gpt-4o-mini');
    expect(fastTier).toContain(completion.model);
    const record = await trace(completion.id);
    expect(record.attempts[0]).toMatchObject({ model: 'gpt-4o-mini', provider: 'openai', outcome: 'failed' });
    if (status) expect(record.attempts[0]?.status).toBe(status);
    expect(record.attempts.at(-1)).toMatchObject({ model: completion.model, outcome: 'succeeded' });
  });
});

describe('streamed failover', () => {
  it('switches silently when the stream fails before the first token', async () => {
    await platform.simulator.addFault({
      match: { model: upstream['gpt-4o-mini'] },
      fault: { stall_after_tokens: 0, stall_ms: 3000 },
    });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Go' }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.model).not.toBe('gpt-4o-mini');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('ends with an in-band error, never a silent truncation, when the stream breaks after tokens', async () => {
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o-mini'] }, fault: { cut_after_tokens: 2 } });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Go on' }],
      stream: true,
    });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((caught: unknown) => caught);
    expect(text.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toMatch(/interrupted/);
  });

  it('estimates usage when the provider sends none', async () => {
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o-mini'] }, fault: { no_usage: true } });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Count me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let id = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      id = chunk.id;
      usage = chunk.usage ?? usage;
    }
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(await trace(id)).toMatchObject({ status: 'completed', usage_estimated: true });
  });
});

describe('no failover on the caller’s own error', () => {
  it('answers 400 when the provider rejects the request itself', async () => {
    await platform.simulator.resetRequests();
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o-mini'] }, fault: { status: 400 } });
    const error = await ask('gpt-4o-mini').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((await platform.simulator.requests()).total).toBe(1);
  });
});

describe('circuit breaker', () => {
  const circuitOf = async (provider: string) => {
    const body = (await (await platform.fetch('/api/v1/providers')).json()) as {
      providers: Array<{ id: string; circuit: { state: string } }>;
    };
    return body.providers.find((entry) => entry.id === provider)?.circuit.state;
  };

  it('opens after consecutive failures, routes around the provider, and closes after a good probe', async () => {
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o'] }, fault: { status: 503 } });
    for (let index = 0; index < 3; index++) await ask('gpt-4o');
    expect(await circuitOf('openai')).toBe('open');

    await platform.simulator.resetRequests();
    const routedAround = await ask('gpt-4o');
    expect(routedAround.model).not.toBe('gpt-4o');
    const calls = await platform.simulator.requests();
    expect(calls.by_model[upstream['gpt-4o']] ?? 0).toBe(0);

    await platform.simulator.clearFaults();
    await new Promise((resolve) => setTimeout(resolve, 1800));
    const probed = await ask('gpt-4o');
    expect(probed.model).toBe('gpt-4o');
    expect(await circuitOf('openai')).toBe('closed');
  });

  it('is shared by replicas: a circuit opened through one gateway is open for another', async () => {
    const replica = await startReplica(platform);
    try {
      await platform.simulator.addFault({ match: { model: upstream['gpt-4o'] }, fault: { status: 503 } });
      for (let index = 0; index < 3; index++) await ask('gpt-4o');
      await platform.simulator.resetRequests();
      const viaReplica = await new OpenAI({
        apiKey,
        baseURL: `${replica.url}/v1`,
        maxRetries: 0,
      }).chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'Which replica?' }],
      });
      expect(viaReplica.model).not.toBe('gpt-4o');
      expect((await platform.simulator.requests()).by_model[upstream['gpt-4o']] ?? 0).toBe(0);
    } finally {
      await replica.close();
    }
  });

  it('re-opens when the half-open probe fails', async () => {
    await platform.simulator.addFault({ match: { model: upstream['gpt-4o'] }, fault: { status: 500 } });
    for (let index = 0; index < 3; index++) await ask('gpt-4o');
    expect(await circuitOf('openai')).toBe('open');
    await new Promise((resolve) => setTimeout(resolve, 1800));
    const probe = await ask('gpt-4o');
    expect(probe.model).not.toBe('gpt-4o');
    const record = await trace(probe.id);
    expect(record.attempts[0]).toMatchObject({ model: 'gpt-4o', outcome: 'failed' });
    expect(await circuitOf('openai')).toBe('open');
    await platform.simulator.clearFaults();
    await new Promise((resolve) => setTimeout(resolve, 1800));
    await ask('gpt-4o');
    expect(await circuitOf('openai')).toBe('closed');
  });
});

describe('self-hosted fallback', () => {
  it('serves from the self-hosted model when every provider of the tier fails', async () => {
    const fastUpstreams = [
      'claude-haiku-4-5-20251001',
      'gpt-4o-mini-2024-07-18',
      'gemini-2.5-flash',
      'deepseek-chat',
      'llama-3.3-70b-versatile',
    ];
    for (const model of fastUpstreams) await platform.simulator.addFault({ match: { model }, fault: { status: 502 } });
    const completion = await ask('gpt-4o-mini');
    expect(completion.model).toBe('llama3.1-local');
    const record = await trace(completion.id);
    expect(record.attempts).toHaveLength(6);
    expect(record.attempts.at(-1)).toMatchObject({ provider: 'self-hosted', outcome: 'succeeded' });
    const providers = (await (await platform.fetch('/api/v1/providers')).json()) as {
      providers: Array<{ id: string }>;
    };
    expect(providers.providers.map((provider) => provider.id)).toContain('self-hosted');
  });
});
