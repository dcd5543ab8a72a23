/** Request mapping and stream edge cases of the OpenAI-compatible adapter. */
import { describe, expect, it } from '@jest/globals';
import type { ProviderRequest } from '../../activities/providers/types.ts';
import {
  adapterReplaying,
  collect,
  imageMessage,
  pixelPng,
  useProviderHarness,
  weatherTool,
} from './provider-harness.ts';

const harness = useProviderHarness({ beforeEach: ['requests'] });

const fullRequest: ProviderRequest = {
  model: 'gpt-test',
  messages: [
    { role: 'developer', content: 'Answer in French.' },
    { role: 'user', content: 'Weather?' },
  ],
  tools: [weatherTool],
  toolChoice: 'required',
  parallelToolCalls: false,
  maxTokens: 50,
  temperature: 0.3,
  topP: 0.9,
  stop: ['END'],
  seed: 42,
  user: 'user-7',
  responseFormat: { type: 'json_object' },
  presencePenalty: 0.5,
  frequencyPenalty: -0.5,
};

async function lastRequest(): Promise<{ body: unknown; headers: Record<string, string>; path: string }> {
  const summary = await harness.control.requests();
  if (summary.last === null) throw new Error('the simulator saw no request');
  return summary.last;
}

describe('OpenAI-compatible request mapping', () => {
  it('maps every request field and sends the key as a bearer token', async () => {
    await harness.adapter('openai', { provider: 'deepseek' }).generate(fullRequest);
    const { body, headers, path } = await lastRequest();
    expect(path).toBe('/v1/chat/completions');
    expect(headers.authorization).toBe('Bearer test-key');
    expect(body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'Weather?' },
      ],
      max_tokens: 50,
      temperature: 0.3,
      top_p: 0.9,
      stop: ['END'],
      seed: 42,
      user: 'user-7',
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      response_format: { type: 'json_object' },
      tools: [weatherTool],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
  });

  it('uses max_completion_tokens for OpenAI itself', async () => {
    await harness.adapter('openai', { provider: 'openai' }).generate({ ...fullRequest, tools: undefined });
    const { body } = await lastRequest();
    expect(body).toMatchObject({ max_completion_tokens: 50 });
    expect(body).not.toHaveProperty('max_tokens');
    // Tool settings without tools are rejected by OpenAI, so they are left out.
    expect(body).not.toHaveProperty('tool_choice');
    expect(body).not.toHaveProperty('parallel_tool_calls');
  });

  it('passes reasoning_effort through only when the caller set it', async () => {
    await harness.adapter('openai').generate({ ...fullRequest, reasoningEffort: 'high' });
    expect((await lastRequest()).body).toMatchObject({ reasoning_effort: 'high' });
    await harness.adapter('openai').generate(fullRequest);
    expect((await lastRequest()).body).not.toHaveProperty('reasoning_effort');
  });

  it('always asks a stream for usage', async () => {
    await collect(harness.adapter('openai').stream({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
    const { body } = await lastRequest();
    expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('sends no Authorization header for a self-hosted server without a key', async () => {
    const adapter = harness.adapter('openai', { provider: 'ollama', apiKey: '' });
    await adapter.generate({ model: 'llama', messages: [{ role: 'user', content: 'hi' }] }).catch(() => undefined);
    const { headers } = await lastRequest();
    expect(headers).not.toHaveProperty('authorization');
  });
});

/** An adapter whose upstream (a keyless self-hosted server) answers every call with the given SSE text. */
function adapterStreaming(events: string) {
  return adapterReplaying(
    { provider: 'vllm', protocol: 'openai', baseUrl: 'http://upstream.invalid/v1', apiKey: '' },
    events,
  );
}

const request: ProviderRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

describe('OpenAI-compatible stream edge cases', () => {
  it('keeps parallel tool calls apart by index and generates missing ids', async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const parts = await collect(
      adapterStreaming(
        chunk({ tool_calls: [{ index: 0, function: { name: 'a', arguments: '{"x"' } }] }) +
          chunk({ tool_calls: [{ index: 1, id: 'call_b', function: { name: 'b', arguments: '' } }] }) +
          chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }) +
          chunk({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }) +
          chunk({}, 'tool_calls') +
          'data: [DONE]\n\n',
      ).stream(request),
    );
    expect(parts).toEqual([
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'a', argumentsDelta: '{"x"' },
      { type: 'tool-call-delta', index: 1, id: 'call_b', name: 'b', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: ':1}' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls', rawReason: 'tool_calls' },
    ]);
  });

  it('reads DeepSeek reasoning_content as reasoning, with null content beside it', async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const parts = await collect(
      adapterStreaming(
        chunk({ role: 'assistant', content: null, reasoning_content: '' }) +
          chunk({ content: null, reasoning_content: 'Two is' }) +
          chunk({ content: null, reasoning_content: ' even.' }) +
          chunk({ content: 'Yes', reasoning_content: null }) +
          chunk({}, 'stop') +
          'data: [DONE]\n\n',
      ).stream(request),
    );
    expect(parts).toEqual([
      { type: 'reasoning-delta', text: 'Two is' },
      { type: 'reasoning-delta', text: ' even.' },
      { type: 'text-delta', text: 'Yes' },
      { type: 'finish', reason: 'stop', rawReason: 'stop' },
    ]);
  });

  it('accepts a server that ends the body after the finish reason without [DONE]', async () => {
    const parts = await collect(
      adapterStreaming(
        `data: ${JSON.stringify({ choices: [{ delta: { content: 'hey' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })}\n\n`,
      ).stream(request),
    );
    expect(parts).toEqual([
      { type: 'text-delta', text: 'hey' },
      { type: 'finish', reason: 'stop', rawReason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
    ]);
  });

  it('fails a stream that ends before any finish reason as malformed', async () => {
    const stream = adapterStreaming(`data: ${JSON.stringify({ choices: [{ delta: { content: 'he' } }] })}\n\n`).stream(
      request,
    );
    await expect(collect(stream)).rejects.toMatchObject({ kind: 'malformed' });
  });

  it('turns an error chunk into an HTTP ProviderError', async () => {
    const stream = adapterStreaming(
      `data: ${JSON.stringify({ error: { message: 'overloaded', code: 503 } })}\n\n`,
    ).stream(request);
    await expect(collect(stream)).rejects.toMatchObject({ kind: 'http', status: 503, retryable: true });
  });
});

describe('OpenAI-compatible images', () => {
  it('passes image parts through and the model sees them', async () => {
    const response = await harness.adapter('openai').generate({ model: 'gpt-test', messages: [imageMessage] });
    expect(response.content).toBe('Simulated reply from gpt-test to: What is in these? [saw 2 image(s)]');
    const body = (await harness.control.requests()).last?.body as { messages: unknown[] };
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${pixelPng}` } },
          { type: 'image_url', image_url: { url: 'https://images.example.com/cat.webp', detail: 'low' } },
        ],
      },
    ]);
  });
});
