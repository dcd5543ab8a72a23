/** The behaviour every adapter shares, checked for all three wire protocols against the simulator. */
import { describe, expect, it } from '@jest/globals';
import type { ChatMessage } from '../../common/chat.ts';
import {
  collect,
  failureOf,
  promptTokensFor,
  protocols,
  useProviderHarness,
  textOf,
  timeTool,
  toolCallParts,
  weatherArguments,
  weatherTool,
} from './provider-harness.ts';

const harness = useProviderHarness();

const system = 'You are terse.';
const question = 'What is the weather like in Lisbon this weekend, roughly?';
const messages: ChatMessage[] = [
  { role: 'system', content: system },
  { role: 'user', content: question },
];

describe.each(protocols)('%s adapter', (protocol) => {
  const model = `contract-${protocol}`;
  const expectedText = `Simulated reply from ${model} to: ${question.slice(0, 40).trim()}`;
  const expectedWords = expectedText.split(' ').length;

  it('generates text with finish reason and usage', async () => {
    const response = await harness.adapter(protocol).generate({ model, messages });
    expect(response).toEqual({
      content: expectedText,
      toolCalls: [],
      finishReason: 'stop',
      usage: {
        prompt_tokens: promptTokensFor(system, question),
        completion_tokens: expectedWords,
        total_tokens: promptTokensFor(system, question) + expectedWords,
      },
    });
  });

  it('streams the same text as deltas, then one finish, then usage', async () => {
    const adapter = harness.adapter(protocol);
    const generated = await adapter.generate({ model, messages });
    const parts = await collect(adapter.stream({ model, messages }));

    const deltas = parts.filter((part) => part.type === 'text-delta');
    expect(deltas.length).toBe(expectedWords);
    expect(textOf(parts)).toBe(generated.content);
    expect(parts.filter((part) => part.type === 'finish')).toHaveLength(1);
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'stop' });
    expect(parts.at(-1)).toEqual({ type: 'usage', usage: generated.usage });
  });

  it('returns a tool call with arguments built from the schema', async () => {
    const response = await harness.adapter(protocol).generate({ model, messages, tools: [weatherTool] });
    expect(response.finishReason).toBe('tool_calls');
    expect(response.toolCalls).toHaveLength(1);
    const [call] = response.toolCalls;
    expect(call?.id).toMatch(/\S/);
    expect(call?.function.name).toBe('get_weather');
    expect(JSON.parse(call?.function.arguments ?? '')).toEqual(weatherArguments);
  });

  it('streams a tool call whose argument deltas join to valid JSON', async () => {
    const parts = await collect(harness.adapter(protocol).stream({ model, messages, tools: [weatherTool] }));
    const calls = toolCallParts(parts);
    expect(calls[0]).toMatchObject({ index: 0, name: 'get_weather', id: expect.stringMatching(/\S/) });
    expect(calls.every((part) => part.index === 0)).toBe(true);
    expect(JSON.parse(calls.map((part) => part.argumentsDelta).join(''))).toEqual(weatherArguments);
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'tool_calls' });
    expect(parts.at(-1)?.type).toBe('usage');
  });

  it('follows a named tool choice and ignores tools under tool_choice none', async () => {
    const adapter = harness.adapter(protocol);
    const tools = [weatherTool, timeTool];
    const named = await adapter.generate({
      model,
      messages,
      tools,
      toolChoice: { type: 'function', function: { name: 'get_time' } },
    });
    expect(named.toolCalls[0]?.function.name).toBe('get_time');
    expect(JSON.parse(named.toolCalls[0]?.function.arguments ?? '')).toEqual({ zone: 'sample zone' });

    const none = await adapter.generate({ model, messages, tools, toolChoice: 'none' });
    expect(none).toMatchObject({ content: expectedText, toolCalls: [], finishReason: 'stop' });
  });

  it('completes a tool-result round trip', async () => {
    const adapter = harness.adapter(protocol);
    const first = await adapter.generate({ model, messages, tools: [weatherTool] });
    const result = '{"temperature":21,"sky":"clear"}';
    const followUp: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: first.toolCalls },
      { role: 'tool', tool_call_id: first.toolCalls[0]?.id ?? '', content: result },
    ];
    const generated = await adapter.generate({ model, messages: followUp, tools: [weatherTool] });
    expect(generated.finishReason).toBe('stop');
    expect(generated.toolCalls).toEqual([]);
    expect(generated.content).toContain(result);

    const streamed = await collect(adapter.stream({ model, messages: followUp, tools: [weatherTool] }));
    expect(textOf(streamed)).toBe(generated.content);
  });

  it('truncates at max tokens with finish reason length', async () => {
    const adapter = harness.adapter(protocol);
    const generated = await adapter.generate({ model, messages, maxTokens: 3 });
    expect(generated).toMatchObject({ content: 'Simulated reply from', finishReason: 'length' });
    expect(generated.usage?.completion_tokens).toBe(3);
    const parts = await collect(adapter.stream({ model, messages, maxTokens: 3 }));
    expect(textOf(parts)).toBe('Simulated reply from');
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'length' });
  });

  it('ends the text at a stop sequence', async () => {
    const response = await harness.adapter(protocol).generate({ model, messages, stop: [' from'] });
    expect(response).toMatchObject({ content: 'Simulated reply', finishReason: 'stop' });
  });

  it('reports a missing key as an HTTP 401 ProviderError', async () => {
    const error = await failureOf(harness.adapter(protocol, { apiKey: '' }).generate({ model, messages }));
    expect(error).toMatchObject({ provider: protocol, kind: 'http', status: 401 });
  });

  it('reports a caller abort as kind aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failureOf(
      harness.adapter(protocol).generate({ model, messages }, { signal: controller.signal }),
    );
    expect(error).toMatchObject({ kind: 'aborted', retryable: false });
  });
});
