/** The official `openai` SDK consumes the simulator's OpenAI endpoint: proof its wire format is faithful. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI, { RateLimitError } from 'openai';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import { weatherArguments, weatherTool } from './provider-harness.ts';

let simulator: RunningSimulator;
let client: OpenAI;
beforeAll(async () => {
  simulator = await startSimulator();
  client = new OpenAI({ baseURL: `${simulator.url}/v1`, apiKey: 'x', maxRetries: 0 });
});
afterAll(async () => {
  await simulator.close();
});

const messages = [{ role: 'user' as const, content: 'Hello from the SDK' }];

describe('openai SDK against the simulator', () => {
  it('reads a completion', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-sim', messages });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices[0]?.message.content).toBe('Simulated reply from gpt-sim to: Hello from the SDK');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 });
  });

  it('reads a stream with the usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-sim',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finishReason: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Simulated reply from gpt-sim to: Hello from the SDK');
    expect(finishReason).toBe('stop');
    expect(usage).toMatchObject({ completion_tokens: 9 });
  });

  it('assembles a streamed tool call with the SDK stream helper', async () => {
    // The simulated model calls a tool the message names ("weather" names get_weather).
    const stream = client.chat.completions.stream({
      model: 'gpt-sim',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weatherTool],
    });
    const completion = await stream.finalChatCompletion();
    const call = completion.choices[0]?.message.tool_calls?.[0];
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('expected a function tool call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(weatherArguments);
  });

  it('sees a simulated 429 as a RateLimitError', async () => {
    await simulatorControl(simulator.url).addFault({
      match: { model: 'gpt-limited' },
      fault: { status: 429, retry_after: 2 },
    });
    const failure = client.chat.completions.create({ model: 'gpt-limited', messages });
    await expect(failure).rejects.toBeInstanceOf(RateLimitError);
    await expect(failure).rejects.toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
  });
});
