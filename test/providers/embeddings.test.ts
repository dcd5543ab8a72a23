/**
 * The embedding adapters against the simulator, in each protocol that has embeddings (OpenAI-compatible, Gemini):
 * the wire shapes sent (from the simulator's request log), vectors decoded in order and of length 1, `dimensions`,
 * the simulator's ranking (texts sharing words are closer), and each fault as the right ProviderError.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createEmbeddingAdapter } from '../../activities/providers/index.ts';
import { ProviderError, type EmbeddingAdapter, type ProviderConfig } from '../../activities/providers/types.ts';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';

let simulator: RunningSimulator;
let control: ReturnType<typeof simulatorControl>;

beforeAll(async () => {
  simulator = await startSimulator();
  control = simulatorControl(simulator.url);
});
afterEach(async () => {
  await control.clearFaults();
  await control.resetRequests();
});
afterAll(async () => {
  await simulator?.close();
});

const setups = [
  { protocol: 'openai' as const, model: 'text-embedding-3-small', full: 1536, baseUrl: () => `${simulator.url}/v1` },
  { protocol: 'gemini' as const, model: 'gemini-embedding-001', full: 3072, baseUrl: () => simulator.url },
];

function adapterFor(setup: (typeof setups)[number], overrides: Partial<ProviderConfig> = {}): EmbeddingAdapter {
  return createEmbeddingAdapter({
    provider: setup.protocol,
    protocol: setup.protocol,
    baseUrl: setup.baseUrl(),
    apiKey: 'test-key',
    ...overrides,
  })!;
}

const norm = (vector: Float32Array) => Math.hypot(...vector);
const cosine = (left: Float32Array, right: Float32Array) =>
  left.reduce((sum, value, index) => sum + value * right[index]!, 0);

async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (failure: unknown) => failure,
  );
  if (!(error instanceof ProviderError)) throw new Error(`expected a ProviderError, got ${String(error)}`);
  return error;
}

describe.each(setups)('$protocol embeddings', (setup) => {
  it('embeds texts in order, at the model length, each of length 1, deterministically', async () => {
    const texts = ['the first text', 'a second, different one', 'the first text'];
    const response = await adapterFor(setup).embed({ model: setup.model, texts });
    expect(response.vectors).toHaveLength(3);
    for (const vector of response.vectors) {
      expect(vector).toBeInstanceOf(Float32Array);
      expect(vector.length).toBe(setup.full);
      expect(norm(vector)).toBeCloseTo(1, 5);
    }
    expect(Array.from(response.vectors[2]!)).toEqual(Array.from(response.vectors[0]!));
    expect(cosine(response.vectors[0]!, response.vectors[1]!)).toBeLessThan(0.5);
    // OpenAI reports usage; Gemini reports none for embeddings.
    if (setup.protocol === 'openai') expect(response.promptTokens).toBeGreaterThan(0);
    else expect(response.promptTokens).toBeNull();
  });

  it('speaks the real wire protocol', async () => {
    await adapterFor(setup).embed({ model: setup.model, texts: ['hello', 'world'], dimensions: 256 });
    const { last } = await control.requests();
    if (setup.protocol === 'openai') {
      expect(last).toMatchObject({
        path: '/v1/embeddings',
        headers: { authorization: 'Bearer test-key' },
        body: { model: setup.model, input: ['hello', 'world'], encoding_format: 'base64', dimensions: 256 },
      });
    } else {
      expect(last).toMatchObject({
        path: `/v1beta/models/${setup.model}:batchEmbedContents`,
        headers: { 'x-goog-api-key': 'test-key' },
        body: {
          requests: [
            { model: `models/${setup.model}`, content: { parts: [{ text: 'hello' }] }, outputDimensionality: 256 },
            { model: `models/${setup.model}`, content: { parts: [{ text: 'world' }] }, outputDimensionality: 256 },
          ],
        },
      });
    }
  });

  it('shortens vectors to `dimensions`, still of length 1 (Gemini leaves them unnormalised: the adapter does it)', async () => {
    const response = await adapterFor(setup).embed({
      model: setup.model,
      texts: ['contract termination'],
      dimensions: 128,
    });
    expect(response.vectors[0]!.length).toBe(128);
    expect(norm(response.vectors[0]!)).toBeCloseTo(1, 5);
  });

  it('ranks texts that share words above texts that do not', async () => {
    const documents = [
      'Bananas are a yellow fruit rich in potassium.',
      'Either party may terminate the contract with thirty days written notice.',
      'The weather tomorrow will be sunny with light wind.',
    ];
    const query = 'How can the contract be terminated, and with how much notice?';
    const { vectors } = await adapterFor(setup).embed({ model: setup.model, texts: [query, ...documents] });
    const scores = documents.map((_, index) => cosine(vectors[0]!, vectors[index + 1]!));
    expect(scores[1]).toBeGreaterThan(0.2);
    expect(scores[1]).toBeGreaterThan(scores[0]! + 0.15);
    expect(scores[1]).toBeGreaterThan(scores[2]! + 0.15);
  });

  it('splits a request larger than one upstream call takes (Gemini: 100 texts) and keeps the order', async () => {
    const texts = Array.from({ length: 130 }, (_, index) => `text number ${index}`);
    const response = await adapterFor(setup).embed({ model: setup.model, texts });
    expect(response.vectors).toHaveLength(130);
    const single = await adapterFor(setup).embed({ model: setup.model, texts: ['text number 129'] });
    expect(Array.from(response.vectors[129]!)).toEqual(Array.from(single.vectors[0]!));
    const { total } = await control.requests();
    expect(total).toBe(setup.protocol === 'gemini' ? 3 : 2);
  });

  it('fails over on 429 and 5xx (retryable), not on a refused request (400)', async () => {
    const match = { model: setup.model, protocol: setup.protocol };
    await control.addFault({ match, times: 1, fault: { status: 429, retry_after: 7 } });
    expect(await failureOf(adapterFor(setup).embed({ model: setup.model, texts: ['x'] }))).toMatchObject({
      kind: 'http',
      status: 429,
      retryable: true,
      retryAfterSeconds: 7,
    });
    await control.addFault({ match, times: 1, fault: { status: 503 } });
    expect(await failureOf(adapterFor(setup).embed({ model: setup.model, texts: ['x'] }))).toMatchObject({
      status: 503,
      retryable: true,
    });
    // More dimensions than the model has: the provider's own 400.
    expect(
      await failureOf(adapterFor(setup).embed({ model: setup.model, texts: ['x'], dimensions: setup.full + 1 })),
    ).toMatchObject({ kind: 'http', status: 400, retryable: false });
  });

  it('a cut, a stall and a malformed body are failures of their kind', async () => {
    const match = { model: setup.model, protocol: setup.protocol };
    await control.addFault({ match, times: 1, fault: { malformed_after_tokens: 0 } });
    expect(await failureOf(adapterFor(setup).embed({ model: setup.model, texts: ['x'] }))).toMatchObject({
      kind: 'malformed',
      retryable: true,
    });
    await control.addFault({ match, times: 1, fault: { cut_after_tokens: 0 } });
    expect(await failureOf(adapterFor(setup).embed({ model: setup.model, texts: ['x'] }))).toMatchObject({
      retryable: true,
    });
    await control.addFault({ match, times: 1, fault: { stall_after_tokens: 0, stall_ms: 5_000 } });
    const stalled = adapterFor(setup, { requestTimeoutMs: 300 });
    expect(await failureOf(stalled.embed({ model: setup.model, texts: ['x'] }))).toMatchObject({
      kind: 'timeout',
      retryable: true,
    });
  });

  it('a missing key is the upstream 401 (our credentials: failover, not the caller’s fault)', async () => {
    const error = await failureOf(adapterFor(setup, { apiKey: '' }).embed({ model: setup.model, texts: ['x'] }));
    expect(error).toMatchObject({ kind: 'http', status: 401, retryable: true });
  });
});

describe('the simulator under the official clients’ shapes', () => {
  it('answers float and base64 alike, and refuses what OpenAI refuses', async () => {
    const post = (body: unknown) =>
      fetch(`${simulator.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const floats = (await (await post({ model: 'text-embedding-3-small', input: 'same text' })).json()) as {
      data: Array<{ embedding: number[] }>;
      usage: { prompt_tokens: number };
    };
    const base64 = (await (
      await post({ model: 'text-embedding-3-small', input: 'same text', encoding_format: 'base64' })
    ).json()) as { data: Array<{ embedding: string }> };
    const bytes = Buffer.from(base64.data[0]!.embedding, 'base64');
    const decoded = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    expect(Array.from(decoded)).toEqual(Array.from(Float32Array.from(floats.data[0]!.embedding)));
    expect((await post({ model: 'text-embedding-3-small', input: '' })).status).toBe(400);
    expect((await post({ model: 'text-embedding-ada-002', input: 'x', dimensions: 10 })).status).toBe(400);
  });

  it('applies faults to Gemini’s embedContent too', async () => {
    await control.addFault({ match: { protocol: 'gemini' }, times: 1, fault: { status: 500 } });
    const call = () =>
      fetch(`${simulator.url}/v1beta/models/gemini-embedding-001:embedContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
        body: JSON.stringify({ content: { parts: [{ text: 'hello' }] }, outputDimensionality: 8 }),
      });
    expect((await call()).status).toBe(500);
    const body = (await (await call()).json()) as { embedding: { values: number[] } };
    expect(body.embedding.values).toHaveLength(8);
  });
});
