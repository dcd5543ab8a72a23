/**
 * Each adapter's stream translator against its provider's documented event grammar, with streams in the shapes the
 * providers send (and the simulator never does): what the grammar allows is read (content and a stop reason carried in
 * Anthropic's first event), what it forbids is a `malformed` failure, never a normal end with broken tool JSON.
 */
import { describe, expect, it } from '@jest/globals';
import type { ProviderRequest } from '../../activities/providers/types.ts';
import { adapterReplaying, collect, collectUntilFailure } from './provider-harness.ts';

const request: ProviderRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

const anthropic = (events: Array<{ type: string } & Record<string, unknown>>) =>
  adapterReplaying(
    { provider: 'anthropic', protocol: 'anthropic', baseUrl: 'http://upstream.invalid', apiKey: 'k' },
    events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''),
  ).stream(request);

const openai = (chunks: Array<Record<string, unknown> | '[DONE]'>) =>
  adapterReplaying(
    { provider: 'vllm', protocol: 'openai', baseUrl: 'http://upstream.invalid/v1', apiKey: '' },
    chunks.map((chunk) => `data: ${chunk === '[DONE]' ? chunk : JSON.stringify(chunk)}\n\n`).join(''),
  ).stream(request);

const gemini = (chunks: unknown[]) =>
  adapterReplaying(
    { provider: 'gemini', protocol: 'gemini', baseUrl: 'http://upstream.invalid', apiKey: 'k' },
    chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join(''),
  ).stream(request);

const start = { type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } };
const textBlock = (index: number, text: string) => [
  { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
  { type: 'content_block_stop', index },
];
const end = [
  { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } },
  { type: 'message_stop' },
];

describe('Anthropic Messages stream grammar', () => {
  it('reads content blocks and a stop reason carried in message_start as content', async () => {
    const parts = await collect(
      anthropic([
        {
          type: 'message_start',
          message: {
            content: [
              { type: 'text', text: 'Already here. ' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
            ],
            stop_reason: 'tool_use',
            usage: { input_tokens: 5, output_tokens: 9 },
          },
        },
        { type: 'ping' },
        { type: 'message_stop' },
      ]),
    );
    expect(parts).toEqual([
      { type: 'text-delta', text: 'Already here. ' },
      { type: 'tool-call-delta', index: 0, id: 'toolu_1', name: 'get_weather', argumentsDelta: '{"city":"Oslo"}' },
      { type: 'finish', reason: 'tool_calls', rawReason: 'tool_use' },
      { type: 'usage', usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } },
    ]);
  });

  it('takes blocks after the ones message_start carried, and pings anywhere', async () => {
    const parts = await collect(
      anthropic([
        { type: 'message_start', message: { content: [{ type: 'text', text: 'A' }], usage: { input_tokens: 1 } } },
        { type: 'ping' },
        ...textBlock(1, 'B'),
        ...end,
        { type: 'ping' },
      ]),
    );
    expect(parts.filter((part) => part.type === 'text-delta')).toEqual([
      { type: 'text-delta', text: 'A' },
      { type: 'text-delta', text: 'B' },
    ]);
  });

  it.each([
    ['a message that starts again while a block is open', [start, textBlock(0, 'x')[0]!, textBlock(0, 'x')[1]!, start]],
    ['content before message_start', [...textBlock(0, 'x'), ...end]],
    ['a block started while another is open', [start, textBlock(0, 'x')[0]!, textBlock(1, 'y')[0]!]],
    ['a block index used twice', [start, ...textBlock(0, 'x'), ...textBlock(0, 'y'), ...end]],
    ['a delta for a block that is not open', [start, ...textBlock(0, 'x'), textBlock(0, 'late')[1]!, ...end]],
    [
      'a delta of another kind than its block',
      [
        start,
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{}' } },
      ],
    ],
    [
      'a tool call whose arguments never close',
      [
        start,
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't', name: 'get_weather' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "Os' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } },
        { type: 'message_stop' },
      ],
    ],
    ['the message ending with a block open', [start, textBlock(0, 'x')[0]!, { type: 'message_stop' }]],
    ['events after message_stop', [start, ...textBlock(0, 'x'), ...end, ...textBlock(1, 'more')]],
  ] as Array<[string, Array<{ type: string } & Record<string, unknown>>]>)(
    'fails %s as malformed',
    async (_, events) => {
      const { error } = await collectUntilFailure(anthropic(events));
      expect(error.kind).toBe('malformed');
    },
  );

  it('never ends a stream with broken tool JSON normally: the text before it came out, then the failure', async () => {
    const { parts, error } = await collectUntilFailure(
      anthropic([
        start,
        ...textBlock(0, 'Checking. '),
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't', name: 'get_weather' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
        { type: 'content_block_stop', index: 1 },
        ...end,
      ]),
    );
    expect(parts.some((part) => part.type === 'finish')).toBe(false);
    expect(parts[0]).toEqual({ type: 'text-delta', text: 'Checking. ' });
    expect(error.kind).toBe('malformed');
  });
});

describe('OpenAI-compatible stream grammar', () => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const usage = { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } };

  it('closes a tool call that streamed no argument text as {}', async () => {
    const parts = await collect(
      openai([
        chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_a', function: { name: 'get_time' } }] }),
        chunk({}, 'tool_calls'),
        usage,
        '[DONE]',
      ]),
    );
    expect(parts).toContainEqual({ type: 'tool-call-delta', index: 0, argumentsDelta: '{}' });
    expect(parts.at(-2)).toMatchObject({ type: 'finish', reason: 'tool_calls' });
  });

  it.each([
    [
      'a tool call whose arguments never close',
      [
        chunk({
          tool_calls: [{ index: 0, id: 'call_a', function: { name: 'get_weather', arguments: '{"city": "Os' } }],
        }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ],
    ],
    ['a tool call that starts without a name', [chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] })]],
    ['content after the finish reason', [chunk({ content: 'Done.' }, 'stop'), chunk({ content: ' More.' }), '[DONE]']],
    ['events after [DONE]', [chunk({ content: 'Done.' }, 'stop'), '[DONE]', chunk({ content: 'late' })]],
  ] as Array<[string, Array<Record<string, unknown> | '[DONE]'>]>)('fails %s as malformed', async (_, chunks) => {
    const { error } = await collectUntilFailure(openai(chunks));
    expect(error.kind).toBe('malformed');
  });
});

describe('Gemini stream grammar', () => {
  const text = (value: string, finishReason?: string) => ({
    candidates: [{ content: { role: 'model', parts: [{ text: value }] }, ...(finishReason ? { finishReason } : {}) }],
  });

  it('takes a usage-only chunk after the finish', async () => {
    const parts = await collect(
      gemini([text('Hello', 'STOP'), { usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 3 } }]),
    );
    expect(parts.at(-1)).toEqual({ type: 'usage', usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });
  });

  it('fails content after the finish reason as malformed', async () => {
    const { error } = await collectUntilFailure(gemini([text('Hello', 'STOP'), text(' again')]));
    expect(error.kind).toBe('malformed');
  });
});
