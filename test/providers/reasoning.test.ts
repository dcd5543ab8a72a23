/**
 * Reasoning from reasoning models, for all three wire protocols against the simulator: it arrives as
 * reasoning-delta parts before the answer (or as `reasoning` when not streamed) and is never part of the text.
 */
import { describe, expect, it } from '@jest/globals';
import type { ProviderRequest, WireProtocol } from '../../activities/providers/types.ts';
import type { ChatMessage } from '../../common/chat.ts';
import type { StreamPart } from '../../common/stream-parts.ts';
import { collect, protocols, useProviderHarness, textOf, toolCallParts, weatherTool } from './provider-harness.ts';

const harness = useProviderHarness();

// Names the weather tool, so a request that offers it gets a call.
const question = 'Will the weather in Lisbon stay dry this weekend?';
const messages: ChatMessage[] = [{ role: 'user', content: question }];

/**
 * A request that turns reasoning on for the protocol: DeepSeek's reasoner reasons by its model (the simulator's
 * rule is a model id containing `reasoner`), Claude and Gemini when the request carries a reasoning effort.
 */
function reasoningRequest(protocol: WireProtocol, extra: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    model: protocol === 'openai' ? 'sim-reasoner' : `thinking-${protocol}`,
    messages,
    reasoningEffort: 'low',
    ...extra,
  };
}

function reasoningOf(parts: StreamPart[]): string {
  return parts.map((part) => (part.type === 'reasoning-delta' ? part.text : '')).join('');
}

function firstIndex(parts: StreamPart[], type: StreamPart['type']): number {
  return parts.findIndex((part) => part.type === type);
}

describe.each(protocols)('%s reasoning', (protocol) => {
  const request = reasoningRequest(protocol);
  const expectedReasoning = `Simulated reasoning of ${request.model} about: ${question.slice(0, 40).trim()}`;
  const expectedText = `Simulated reply from ${request.model} to: ${question.slice(0, 40).trim()}`;
  const reasoningWords = expectedReasoning.split(' ').length;
  const textWords = expectedText.split(' ').length;

  it('returns reasoning apart from the content when not streamed', async () => {
    const response = await harness.adapter(protocol).generate(request);
    expect(response.content).toBe(expectedText);
    expect(response.reasoning).toBe(expectedReasoning);
    expect(response.finishReason).toBe('stop');
    // Reasoning is generated output: it counts as completion tokens.
    expect(response.usage?.completion_tokens).toBe(reasoningWords + textWords);
  });

  it('streams reasoning deltas before the text, which holds none of it', async () => {
    const parts = await collect(harness.adapter(protocol).stream(request));
    expect(reasoningOf(parts)).toBe(expectedReasoning);
    expect(textOf(parts)).toBe(expectedText);
    const lastReasoning = parts.findLastIndex((part) => part.type === 'reasoning-delta');
    expect(lastReasoning).toBeLessThan(firstIndex(parts, 'text-delta'));
    expect(parts.filter((part) => part.type === 'reasoning-delta').length).toBe(reasoningWords);
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'stop' });
    expect(parts.at(-1)).toMatchObject({
      type: 'usage',
      usage: { completion_tokens: reasoningWords + textWords },
    });
  });

  it('reasons before a tool call too', async () => {
    const parts = await collect(harness.adapter(protocol).stream({ ...request, tools: [weatherTool] }));
    expect(reasoningOf(parts)).toBe(expectedReasoning);
    expect(textOf(parts)).toBe('');
    expect(toolCallParts(parts)[0]).toMatchObject({ index: 0, name: 'get_weather' });
    expect(firstIndex(parts, 'reasoning-delta')).toBeLessThan(firstIndex(parts, 'tool-call-delta'));
    const generated = await harness.adapter(protocol).generate({ ...request, tools: [weatherTool] });
    expect(generated).toMatchObject({ content: null, reasoning: expectedReasoning, finishReason: 'tool_calls' });
  });

  it('finishes a tool loop whose first round reasoned', async () => {
    const adapter = harness.adapter(protocol);
    const first = await adapter.generate({ ...request, tools: [weatherTool] });
    const followUp: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: first.toolCalls },
      { role: 'tool', tool_call_id: first.toolCalls[0]?.id ?? '', content: '{"sky":"clear"}' },
    ];
    // Anthropic wants the signed thinking blocks back mid tool loop; the adapter leaves thinking off instead.
    const parts = await collect(adapter.stream({ ...request, messages: followUp, tools: [weatherTool] }));
    expect(textOf(parts)).toContain('{"sky":"clear"}');
    expect(textOf(parts)).not.toContain('Simulated reasoning');
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'stop' });
  });
});

describe('reasoning only when asked', () => {
  it.each(['anthropic', 'gemini'] as const)('%s yields none without a reasoning effort', async (protocol) => {
    const { reasoningEffort: _effort, ...plain } = reasoningRequest(protocol);
    const parts = await collect(harness.adapter(protocol).stream(plain));
    expect(parts.some((part) => part.type === 'reasoning-delta')).toBe(false);
    const none = await collect(harness.adapter(protocol).stream({ ...plain, reasoningEffort: 'none' }));
    expect(none.some((part) => part.type === 'reasoning-delta')).toBe(false);
    expect((await harness.adapter(protocol).generate(plain)).reasoning).toBeUndefined();
  });

  it('an OpenAI-compatible model that is no reasoner yields none, whatever the effort', async () => {
    const parts = await collect(
      harness.adapter('openai').stream({ model: 'o-sim', messages, reasoningEffort: 'high' }),
    );
    expect(parts.some((part) => part.type === 'reasoning-delta')).toBe(false);
  });
});
