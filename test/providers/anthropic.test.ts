/** Request mapping and stream edge cases of the Anthropic adapter. */
import { describe, expect, it } from '@jest/globals';
import { createProviderAdapter } from '../../activities/providers/index.ts';
import type { ProviderRequest } from '../../activities/providers/types.ts';
import {
  adapterReplaying,
  collect,
  imageMessage,
  pixelPng,
  useProviderHarness,
  timeTool,
  weatherTool,
} from './provider-harness.ts';

const harness = useProviderHarness({ beforeEach: ['requests'] });

async function lastBody(): Promise<unknown> {
  return (await harness.control.requests()).last?.body;
}

describe('Anthropic request mapping', () => {
  it('moves system prompts to `system`, maps parameters and sends the version header', async () => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Use metric units.' },
        { role: 'user', content: 'Weather?' },
      ],
      temperature: 1.6,
      topP: 0.5,
      stop: ['END'],
      seed: 3,
      user: 'user-9',
    });
    const summary = await harness.control.requests();
    expect(summary.last?.path).toBe('/v1/messages');
    expect(summary.last?.headers).toMatchObject({ 'x-api-key': 'test-key', 'anthropic-version': '2023-06-01' });
    expect(summary.last?.body).toEqual({
      model: 'claude-test',
      // Anthropic requires max_tokens; the adapter supplies its default.
      max_tokens: 4096,
      system: 'Be brief.\n\nUse metric units.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather?' }] }],
      // Clamped to Anthropic's range; top_p is dropped because newer models reject both together.
      temperature: 1,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-9' },
    });
  });

  it('maps tool calls to tool_use blocks and merges consecutive tool results into one user turn', async () => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [
        { role: 'user', content: 'Weather and time?' },
        {
          role: 'assistant',
          content: 'Checking both.',
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'toolu_2', content: '12:00' },
      ],
      tools: [weatherTool, timeTool],
      toolChoice: { type: 'function', function: { name: 'get_time' } },
      parallelToolCalls: false,
      maxTokens: 200,
    });
    expect(await lastBody()).toMatchObject({
      max_tokens: 200,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather and time?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking both.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Lisbon' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: '12:00' },
          ],
        },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather for a city',
          input_schema: weatherTool.function.parameters,
        },
        { name: 'get_time', input_schema: timeTool.function.parameters },
      ],
      tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
    });
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['required', { type: 'any' }],
    ['none', { type: 'none' }],
  ] as const)('maps tool_choice %s', async (toolChoice, expected) => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      toolChoice,
    });
    expect(await lastBody()).toMatchObject({ tool_choice: expected });
  });

  it('turns a reasoning effort into extended thinking and drops the sampling knobs thinking refuses', async () => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hi' }],
      reasoningEffort: 'high',
      maxTokens: 32_000,
      temperature: 0.2,
      topP: 0.5,
    });
    const body = await lastBody();
    expect(body).toMatchObject({ max_tokens: 32_000, thinking: { type: 'enabled', budget_tokens: 24_576 } });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('top_p');
  });

  it('keeps the thinking budget inside max_tokens, and thinks not at all when it does not fit', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const adapter = harness.adapter('anthropic');
    // The default max_tokens (4,096) also bounds thinking; the answer keeps 1,024 of it.
    await adapter.generate({ model: 'claude-test', messages, reasoningEffort: 'high' });
    expect(await lastBody()).toMatchObject({ max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 3072 } });
    await adapter.generate({ model: 'claude-test', messages, reasoningEffort: 'low', maxTokens: 2000 });
    expect(await lastBody()).not.toHaveProperty('thinking');
    await adapter.generate({ model: 'claude-test', messages, reasoningEffort: 'none' });
    expect(await lastBody()).not.toHaveProperty('thinking');
  });

  it('leaves thinking off when the caller forces a tool, which Anthropic refuses with thinking', async () => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      toolChoice: 'required',
      reasoningEffort: 'medium',
    });
    const body = await lastBody();
    expect(body).toMatchObject({ tool_choice: { type: 'any' } });
    expect(body).not.toHaveProperty('thinking');
  });

  it('asks for JSON through the system prompt', async () => {
    await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'hi' }],
      responseFormat: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } },
    });
    expect(await lastBody()).toMatchObject({ system: expect.stringContaining('{"type":"object"}') });
  });
});

/** An adapter whose upstream answers every call with the given Anthropic events. */
function adapterStreaming(events: Array<{ type: string } & Record<string, unknown>>) {
  const text = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');
  return adapterReplaying(
    { provider: 'anthropic', protocol: 'anthropic', baseUrl: 'http://upstream.invalid', apiKey: 'k' },
    text,
  );
}

const request: ProviderRequest = { model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] };

describe('Anthropic stream edge cases', () => {
  it('numbers tool calls from 0 over tool_use blocks only, after a text block', async () => {
    const parts = await collect(
      adapterStreaming([
        {
          type: 'message_start',
          message: { usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 1 } },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me check.' } },
        { type: 'content_block_stop', index: 0 },
        {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 'toolu_a', name: 'get_weather' },
        },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Oslo"}' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'get_time' } },
        { type: 'content_block_stop', index: 2 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 30 } },
        { type: 'message_stop' },
      ]).stream(request),
    );
    expect(parts).toEqual([
      { type: 'text-delta', text: 'Let me check.' },
      { type: 'tool-call-delta', index: 0, id: 'toolu_a', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '"Oslo"}' },
      { type: 'tool-call-delta', index: 1, id: 'toolu_b', name: 'get_time', argumentsDelta: '' },
      // A tool without input streams no JSON; `{}` keeps its arguments valid.
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls', rawReason: 'tool_use' },
      // Cached prompt tokens count as prompt tokens.
      { type: 'usage', usage: { prompt_tokens: 15, completion_tokens: 30, total_tokens: 45 } },
    ]);
  });

  it('yields thinking as reasoning, skips signatures and redacted thinking, and sets a later block apart', async () => {
    const parts = await collect(
      adapterStreaming([
        { type: 'message_start', message: { usage: { input_tokens: 3, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two is' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: ' prime.' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAh' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'EmwKAhgB' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'content_block_start', index: 2, content_block: { type: 'thinking', thinking: '' } },
        { type: 'content_block_delta', index: 2, delta: { type: 'thinking_delta', thinking: 'So no.' } },
        { type: 'content_block_delta', index: 2, delta: { type: 'signature_delta', signature: 'EqQBCgIYAi' } },
        { type: 'content_block_stop', index: 2 },
        { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'No.' } },
        { type: 'content_block_stop', index: 3 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12 } },
        { type: 'message_stop' },
      ]).stream(request),
    );
    expect(parts).toEqual([
      { type: 'reasoning-delta', text: 'Two is' },
      { type: 'reasoning-delta', text: ' prime.' },
      { type: 'reasoning-delta', text: '\n\nSo no.' },
      { type: 'text-delta', text: 'No.' },
      { type: 'finish', reason: 'stop', rawReason: 'end_turn' },
      { type: 'usage', usage: { prompt_tokens: 3, completion_tokens: 12, total_tokens: 15 } },
    ]);
  });

  it('maps thinking blocks of a whole message to reasoning the same way', async () => {
    const message = {
      content: [
        { type: 'thinking', thinking: 'Two is prime.', signature: 'EqQBCgIYAh' },
        { type: 'redacted_thinking', data: 'EmwKAhgB' },
        { type: 'thinking', thinking: 'So no.', signature: 'EqQBCgIYAi' },
        { type: 'text', text: 'No.' },
      ],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 12 },
    };
    const adapter = createProviderAdapter({
      provider: 'anthropic',
      protocol: 'anthropic',
      baseUrl: 'http://upstream.invalid',
      apiKey: 'k',
      fetch: async () => Response.json(message),
    });
    expect(await adapter.generate(request)).toEqual({
      content: 'No.',
      reasoning: 'Two is prime.\n\nSo no.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { prompt_tokens: 3, completion_tokens: 12, total_tokens: 15 },
    });
  });

  it('turns an error event into a retryable ProviderError', async () => {
    const stream = adapterStreaming([
      { type: 'message_start', message: { usage: { input_tokens: 1 } } },
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    ]).stream(request);
    await expect(collect(stream)).rejects.toMatchObject({ kind: 'http', status: 529, retryable: true });
  });

  it('fails a stream that ends before message_stop as malformed', async () => {
    const stream = adapterStreaming([
      { type: 'message_start', message: {} },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: 'partial' } },
    ]).stream(request);
    await expect(collect(stream)).rejects.toMatchObject({ kind: 'malformed' });
  });
});

describe('Anthropic images', () => {
  it('sends a data URL as a base64 source and an https URL as a url source; the model sees both', async () => {
    const response = await harness.adapter('anthropic').generate({ model: 'claude-test', messages: [imageMessage] });
    expect(response.content).toBe('Simulated reply from claude-test to: What is in these? [saw 2 image(s)]');
    const body = (await harness.control.requests()).last?.body as { messages: unknown[] };
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixelPng } },
          { type: 'image', source: { type: 'url', url: 'https://images.example.com/cat.webp' } },
        ],
      },
    ]);
  });

  it('answers a JSON-schema response format, asked for in the system prompt, with conforming JSON', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } };
    const response = await harness.adapter('anthropic').generate({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'Plan a trip to Rome' }],
      responseFormat: { type: 'json_schema', json_schema: { name: 'trip', schema } },
    });
    expect(JSON.parse(response.content ?? '')).toEqual({ city: 'Simulated city about: Plan a trip to Rome', days: 1 });
  });
});
