/** The gateway through the official `openai` SDK: models, completions, streaming, tools, errors. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

const weatherTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// One model per wire protocol: OpenAI-compatible, Anthropic Messages, Gemini.
const models = ['gpt-4o-mini', 'claude-haiku-4-5', 'gemini-2.5-flash'];

let platform: TestPlatform;
let client: OpenAI;
let apiKey: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  apiKey = (await platform.createKey()).key;
  client = platform.openai(apiKey);
});

afterAll(async () => {
  await platform?.close();
});

describe('models', () => {
  it('lists the 12 catalogue models without a key, and refuses a wrong one', async () => {
    // A key that is sent must be valid, here too: a client's "test connection" (a models list) tells a wrong key.
    const wrong = await new OpenAI({ apiKey: 'none', baseURL: `${platform.gateway.url}/v1` }).models
      .list()
      .catch((error: unknown) => error);
    expect((wrong as InstanceType<typeof OpenAI.APIError>).status).toBe(401);
    const page = (await (await fetch(`${platform.gateway.url}/v1/models`)).json()) as {
      data: Array<{ id: string; object: string; created: number; owned_by: string }>;
    };
    expect(page.data).toHaveLength(12);
    expect(page.data.map((model) => model.id)).toEqual(
      expect.arrayContaining(['claude-opus-4-5', 'gpt-4o', 'qwen3-coder-plus']),
    );
    expect(page.data.every((model) => model.object === 'model' && typeof model.created === 'number')).toBe(true);
    expect(page.data.find((model) => model.id === 'gemini-2.5-pro')?.owned_by).toBe('google');
  });

  it('lists dated pins on request and retrieves a pin', async () => {
    const response = await platform.fetch('/v1/models?include=versions');
    const body = (await response.json()) as { data: Array<{ id: string }> };
    expect(body.data.map((model) => model.id)).toContain('gpt-4o-2024-11-20');
    const pinned = await client.models.retrieve('gpt-4o-2024-08-06');
    expect(pinned).toMatchObject({ id: 'gpt-4o-2024-08-06', owned_by: 'openai' });
  });

  it('publishes prices per 1M tokens', async () => {
    const response = await platform.fetch('/v1/models/pricing');
    const body = (await response.json()) as { models: Record<string, { input_per_1m: number; output_per_1m: number }> };
    expect(body.models['claude-opus-4-5']).toEqual({ input_per_1m: 5, output_per_1m: 25 });
    expect(body.models['gpt-4o-mini']).toEqual({ input_per_1m: 0.15, output_per_1m: 0.6 });
    expect(Object.keys(body.models)).toHaveLength(12);
  });
});

describe.each(models)('completions on %s', (model) => {
  it('creates a completion', async () => {
    const completion = await client.chat.completions.create({
      model,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello' },
      ],
      max_tokens: 100,
      temperature: 0.2,
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(model);
    expect(completion.choices[0]?.message.role).toBe('assistant');
    expect(completion.choices[0]?.message.content).toMatch(/\w+/);
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('streams the same answer, role first, finish last, usage on request', async () => {
    const messages = [{ role: 'user' as const, content: 'Stream to me' }];
    const whole = await client.chat.completions.create({ model, messages });
    const stream = await client.chat.completions.create({
      model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]?.message.content);
    const finishes = chunks.filter((chunk) => chunk.choices[0]?.finish_reason);
    expect(finishes).toHaveLength(1);
    expect(finishes[0]?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.every((chunk) => chunk.model === model && chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  });

  it('calls tools and takes their results back', async () => {
    const first = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: 'auto',
    });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toHaveProperty('city');

    const second = await client.chat.completions.create({
      model,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '{"temperature_c":21}' },
      ],
      tools: [weatherTool],
    });
    expect(second.choices[0]?.finish_reason).toBe('stop');
    expect(second.choices[0]?.message.content).toContain('21');
  });

  it('streams tool-call argument deltas', async () => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weatherTool],
      stream: true,
    });
    let name = '';
    let id = '';
    let argumentsText = '';
    let finish: string | null | undefined = null;
    let deltas = 0;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      for (const toolCall of choice?.delta.tool_calls ?? []) {
        expect(toolCall.index).toBe(0);
        id ||= toolCall.id ?? '';
        name += toolCall.function?.name ?? '';
        argumentsText += toolCall.function?.arguments ?? '';
        deltas++;
      }
      finish = choice?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(id).not.toBe('');
    // Gemini sends a function call whole in one chunk; the other two protocols stream argument fragments.
    if (model !== 'gemini-2.5-flash') expect(deltas).toBeGreaterThan(1);
    expect(JSON.parse(argumentsText)).toHaveProperty('city');
    expect(finish).toBe('tool_calls');
  });
});

describe('auto and pinned models', () => {
  it('auto picks a fast model for a plain question and names it', async () => {
    const completion = await client.chat.completions.create({
      model: 'auto',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect([
      'claude-haiku-4-5',
      'gpt-4o-mini',
      'gemini-2.5-flash',
      'deepseek-chat',
      'llama-3.3-70b-versatile',
    ]).toContain(completion.model);
  });

  it('auto picks a model that supports tools when tools are offered', async () => {
    const completion = await client.chat.completions.create({
      model: 'auto',
      messages: [{ role: 'user', content: 'Weather in Rome?' }],
      tools: [weatherTool],
    });
    expect(['claude-sonnet-4-6', 'gpt-4o', 'gemini-2.5-pro', 'qwen3-coder-plus']).toContain(completion.model);
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('serves a dated pin under its pinned name', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-2024-08-06',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(completion.model).toBe('gpt-4o-2024-08-06');
  });
});

describe('reasoning', () => {
  type WithReasoning = { reasoning_content?: string | null };

  it('returns a reasoner’s reasoning as reasoning_content, apart from the content', async () => {
    const completion = await client.chat.completions.create({
      model: 'deepseek-reasoner',
      messages: [{ role: 'user', content: 'Think first' }],
    });
    const message = completion.choices[0]?.message;
    expect(message?.content).toBe('Simulated reply from deepseek-reasoner to: Think first');
    expect((message as WithReasoning | undefined)?.reasoning_content).toBe(
      'Simulated reasoning of deepseek-reasoner about: Think first',
    );
  });

  it.each([
    ['deepseek-reasoner', undefined],
    ['claude-haiku-4-5', 'low'],
    ['gemini-2.5-flash', 'low'],
  ] as const)('streams %s reasoning in delta.reasoning_content before the answer', async (model, effort) => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Think first' }],
      stream: true,
      ...(effort ? { reasoning_effort: effort } : {}),
    });
    let reasoning = '';
    let content = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      const piece = (delta as WithReasoning | undefined)?.reasoning_content ?? '';
      if (piece !== '') expect(content).toBe('');
      reasoning += piece;
      content += delta?.content ?? '';
    }
    expect(reasoning).toMatch(/^Simulated reasoning of \S+ about: Think first$/);
    expect(content).toMatch(/^Simulated reply from \S+ to: Think first$/);
  });

  it('sends reasoning_effort only to OpenAI-compatible models that reason', async () => {
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning_effort: 'low',
    });
    expect((await platform.simulator.requests()).last?.body).not.toHaveProperty('reasoning_effort');
    await client.chat.completions.create({
      model: 'o4-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning_effort: 'low',
    });
    expect((await platform.simulator.requests()).last?.body).toMatchObject({ reasoning_effort: 'low' });
  });
});

describe('errors', () => {
  it('401 authentication_error without a key or with a bad one', async () => {
    for (const key of ['te_not_a_real_key_at_all', 'sk-wrong']) {
      const error = await platform
        .openai(key)
        .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'authentication_error' });
    }
    const response = await platform.fetch('/v1/chat/completions', { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { type: 'authentication_error', message: expect.any(String) } });
  });

  it('400 invalid_request naming the field', async () => {
    const error = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'wizard', content: 'x' }] } as never)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: 'invalid_request',
      message: expect.stringContaining('messages.0'),
    });

    const badTemperature = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: apiKey,
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], temperature: 3 }),
    });
    expect(badTemperature.status).toBe(400);
    expect(((await badTemperature.json()) as { error: { message: string } }).error.message).toMatch(/^temperature/);

    const malformed = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: apiKey,
      body: '{"model": "gpt-4o",',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { type: string } }).error.type).toBe('invalid_request');
  });

  it('404 model_not_found for an unknown model, with no upstream call', async () => {
    await platform.simulator.resetRequests();
    const error = await client.chat.completions
      .create({ model: 'gpt-7', messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'model_not_found' });
    expect((await platform.simulator.requests()).total).toBe(0);
  });

  it('502 upstream_error when every candidate fails, before and during a stream', async () => {
    await platform.simulator.addFault({ fault: { status: 503 } });
    try {
      const error = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'upstream_error' });

      const streamError = await client.chat.completions
        .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true })
        .catch((caught: unknown) => caught);
      expect((streamError as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    } finally {
      await platform.simulator.clearFaults();
    }
  });
});

describe('API keys', () => {
  it('creates, lists with preview and last use, and revokes at once', async () => {
    const owner = await platform.createKey();
    const created = await platform.fetch('/api/v1/apikeys', {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ name: 'ci' }),
    });
    expect(created.status).toBe(201);
    const second = (await created.json()) as { id: string; name: string; key: string; created_at: string };
    expect(second).toMatchObject({ name: 'ci', key: expect.stringMatching(/^te_/) });

    await platform
      .openai(second.key)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    const listing = (await (await platform.fetch('/api/v1/apikeys', { key: owner.key })).json()) as {
      keys: Array<{ id: string; key_preview: string; last_used_at: string | null; key?: string }>;
    };
    expect(listing.keys).toHaveLength(2);
    const listed = listing.keys.find((key) => key.id === second.id)!;
    expect(listed.key).toBeUndefined();
    expect(listed.key_preview).toMatch(/^te_.{4}….{4}$/);
    expect(listed.last_used_at).not.toBeNull();

    const deleted = await platform.fetch(`/api/v1/apikeys/${second.id}`, { method: 'DELETE', key: owner.key });
    expect(await deleted.json()).toEqual({ deleted: true, id: second.id });
    const error = await platform
      .openai(second.key)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('refuses email and plan from a user key', async () => {
    const response = await platform.fetch('/api/v1/apikeys', {
      method: 'POST',
      key: apiKey,
      body: JSON.stringify({ email: 'someone@example.com' }),
    });
    expect(response.status).toBe(403);
  });
});

describe('durability', () => {
  it('makes exactly one upstream call per completion: the workflow adopts the speculative first attempt', async () => {
    await platform.simulator.resetRequests();
    const messages = [{ role: 'user' as const, content: 'Once each' }];
    const plain = Array.from({ length: 8 }, () => client.chat.completions.create({ model: 'gpt-4o-mini', messages }));
    const streamed = Array.from({ length: 8 }, async () => {
      for await (const _chunk of await client.chat.completions.create({
        model: 'claude-haiku-4-5',
        messages,
        stream: true,
      })) {
        // drain
      }
    });
    await Promise.all([...plain, ...streamed]);
    expect((await platform.simulator.requests()).total).toBe(16);
  });

  it('returns the first result for a repeated Idempotency-Key without a second upstream call', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Only once' }] };
    const headers = { 'Idempotency-Key': `key-${Date.now()}` };
    const first = await client.chat.completions.create(body, { headers });
    const before = (await platform.simulator.requests()).total;
    const second = await client.chat.completions.create(body, { headers });
    expect(second.id).toBe(first.id);
    expect(second.choices[0]?.message.content).toBe(first.choices[0]?.message.content);
    expect((await platform.simulator.requests()).total).toBe(before);

    const conflict = await client.chat.completions
      .create({ ...body, max_tokens: 5 }, { headers })
      .catch((caught: unknown) => caught);
    expect((conflict as InstanceType<typeof OpenAI.APIError>).status).toBe(409);
  });

  it('replays a repeated streamed request from the stream journal', async () => {
    const body = {
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user' as const, content: 'Journal me' }],
      stream: true as const,
    };
    const headers = { 'Idempotency-Key': `stream-${Date.now()}` };
    const collect = async () => {
      let text = '';
      for await (const chunk of await client.chat.completions.create(body, { headers }))
        text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const first = await collect();
    const before = (await platform.simulator.requests()).total;
    expect(await collect()).toBe(first);
    expect((await platform.simulator.requests()).total).toBe(before);
  });

  it('resumes a stream after Last-Event-ID from the journal', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'Resume me later' }],
      stream: true,
    });
    let id = '';
    const texts: string[] = [];
    for await (const chunk of stream) {
      id = chunk.id;
      texts.push(chunk.choices[0]?.delta.content ?? '');
    }
    const response = await platform.fetch(`/api/v1/requests/${id}/stream`, {
      key: apiKey,
      headers: { 'Last-Event-ID': '2' },
    });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const body = await response.text();
    const events = body.split('\n\n').filter((block) => block.startsWith('id: ') || block.startsWith('data: '));
    expect(events[0]).toMatch(/^id: 3\n/);
    const resumed = events
      .map((block) =>
        block
          .split('\n')
          .find((line) => line.startsWith('data: '))!
          .slice(6),
      )
      .filter((data) => data !== '[DONE]')
      .map((data) => JSON.parse(data) as { model: string; choices: Array<{ delta: { content?: string } }> })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '');
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    // Events 0-2 were the role chunk and two text deltas; the rest is what a resuming client receives.
    expect(texts.join('')).toBe(texts.slice(0, 3).join('') + resumed.join(''));
  });

  it('exposes each completion as a trace its owner can read', async () => {
    const completion = await client.chat.completions.create({
      model: 'gemini-2.5-flash',
      messages: [{ role: 'user', content: 'Trace me' }],
    });
    // The answer leaves as soon as the provider call returns; the workflow records it a moment later.
    let trace: Record<string, unknown> = {};
    for (let poll = 0; poll < 50 && trace.status !== 'completed'; poll++) {
      const response = await platform.fetch(`/api/v1/requests/${completion.id}`, { key: apiKey });
      expect(response.status).toBe(200);
      trace = (await response.json()) as Record<string, unknown>;
      if (trace.status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(trace).toMatchObject({
      id: completion.id,
      workflow_id: `completion-${completion.id}`,
      status: 'completed',
      model: 'gemini-2.5-flash',
      attempts: [
        {
          attempt: 1,
          model: 'gemini-2.5-flash',
          provider: 'google',
          outcome: 'succeeded',
          latency_ms: expect.any(Number),
        },
      ],
    });
    const stranger = await platform.createKey();
    expect((await platform.fetch(`/api/v1/requests/${completion.id}`, { key: stranger.key })).status).toBe(404);
  });
});

describe('service endpoints', () => {
  it('health answers with a version and its dependencies; /health/live with the version alone', async () => {
    const up = { status: 'ok', checked_at: expect.any(String), latency_ms: expect.any(Number) };
    // The first probes run as the process starts: wait for them to have answered.
    const health = await waitFor('the first probes', async () => {
      const body = (await (await platform.fetch('/health')).json()) as {
        dependencies: Record<string, { checked_at: string | null }>;
      };
      return Object.values(body.dependencies).every((dependency) => dependency.checked_at) && body;
    });
    expect(health).toEqual({ status: 'ok', version: expect.any(String), dependencies: { database: up, temporal: up } });
    expect(await (await platform.fetch('/health/live')).json()).toEqual({ status: 'ok', version: expect.any(String) });
  });

  it('lists providers with models and breaker state', async () => {
    const body = (await (await platform.fetch('/api/v1/providers')).json()) as {
      providers: Array<{ id: string; name: string; models: string[]; circuit: { state: string } }>;
      load_balanced: boolean;
      total_providers: number;
    };
    expect(body.total_providers).toBe(6);
    expect(body.load_balanced).toBe(true);
    expect(body.providers.find((provider) => provider.id === 'anthropic')?.models).toEqual([
      'claude-opus-4-5',
      'claude-sonnet-4-6',
      'claude-haiku-4-5',
    ]);
    expect(body.providers.every((provider) => provider.circuit.state === 'closed')).toBe(true);
  });

  it('exposes Prometheus metrics with completion counts', async () => {
    const text = await (await platform.fetch('/metrics')).text();
    expect(text).toMatch(/tessera_completions_total\{model="gpt-4o-mini",outcome="succeeded",stream="false"\} \d+/);
    expect(text).toMatch(/tessera_http_request_duration_seconds_bucket\{.*route="\/v1\/chat\/completions"/);
  });

  it('answers unknown routes with the error envelope', async () => {
    const response = await platform.fetch('/v1/nothing-here');
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe('not_found');
  });
});
