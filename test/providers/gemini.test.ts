/** Request mapping and stream edge cases of the Gemini adapter. */
import { describe, expect, it } from '@jest/globals';
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

describe('Gemini request mapping', () => {
  it('maps system, parameters and the JSON schema response format', async () => {
    await harness.adapter('gemini').generate({
      model: 'gemini-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather?' },
      ],
      maxTokens: 64,
      temperature: 1.5,
      topP: 0.8,
      stop: ['END'],
      seed: 11,
      user: 'dropped',
      responseFormat: {
        type: 'json_schema',
        json_schema: {
          name: 'weather',
          schema: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            properties: { sky: { type: ['string', 'null'] }, kind: { const: 'report' } },
            required: ['sky'],
            additionalProperties: false,
          },
        },
      },
    });
    const summary = await harness.control.requests();
    expect(summary.last?.path).toBe('/v1beta/models/gemini-test:generateContent');
    expect(summary.last?.headers['x-goog-api-key']).toBe('test-key');
    expect(summary.last?.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Weather?' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: {
        maxOutputTokens: 64,
        temperature: 1.5,
        topP: 0.8,
        stopSequences: ['END'],
        seed: 11,
        responseMimeType: 'application/json',
        // JSON-Schema-only keywords are removed: Gemini rejects a request containing them.
        responseSchema: {
          type: 'object',
          properties: { sky: { type: 'string', nullable: true }, kind: { enum: ['report'] } },
          required: ['sky'],
        },
      },
    });
  });

  it('maps tool calls, names function responses after their call and merges parallel results', async () => {
    await harness.adapter('gemini').generate({
      model: 'gemini-test',
      messages: [
        { role: 'user', content: 'Weather and time?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_0', content: '{"sky":"clear"}' },
        { role: 'tool', tool_call_id: 'call_1', content: 'noon' },
      ],
      tools: [weatherTool, timeTool],
      toolChoice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect((await harness.control.requests()).last?.body).toMatchObject({
      contents: [
        { role: 'user', parts: [{ text: 'Weather and time?' }] },
        {
          role: 'model',
          parts: [
            {
              functionCall: { name: 'get_weather', args: { city: 'Oslo' } },
              thoughtSignature: 'skip_thought_signature_validator',
            },
            { functionCall: { name: 'get_time', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { content: { sky: 'clear' } } } },
            { functionResponse: { name: 'get_time', response: { content: 'noon' } } },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Current weather for a city',
              parameters: {
                type: 'object',
                properties: {
                  city: { type: 'string' },
                  unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
                  days: { type: 'integer' },
                  detailed: { type: 'boolean' },
                },
                required: ['city', 'unit', 'days', 'detailed'],
              },
            },
            { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    });
  });

  it.each([
    ['auto', 'AUTO'],
    ['required', 'ANY'],
    ['none', 'NONE'],
  ] as const)('maps tool_choice %s', async (toolChoice, mode) => {
    await harness.adapter('gemini').generate({
      model: 'gemini-test',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      toolChoice,
    });
    expect((await harness.control.requests()).last?.body).toMatchObject({
      toolConfig: { functionCallingConfig: { mode } },
    });
  });

  it.each([
    ['low', { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } }],
    ['high', { thinkingConfig: { includeThoughts: true, thinkingBudget: 24_576 } }],
  ] as const)('asks for thoughts with a budget for reasoning effort %s', async (reasoningEffort, expected) => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    await harness.adapter('gemini').generate({ model: 'gemini-test', messages, reasoningEffort });
    expect((await harness.control.requests()).last?.body).toMatchObject({ generationConfig: expected });
  });

  it('leaves thinking to the model without an effort or with none', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    for (const reasoningEffort of [undefined, 'none'] as const) {
      await harness.adapter('gemini').generate({ model: 'gemini-test', messages, reasoningEffort });
      expect((await harness.control.requests()).last?.body).not.toHaveProperty('generationConfig.thinkingConfig');
    }
  });

  it('streams from the SSE endpoint', async () => {
    await collect(
      harness.adapter('gemini').stream({ model: 'gemini-test', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect((await harness.control.requests()).last?.path).toBe(
      '/v1beta/models/gemini-test:streamGenerateContent?alt=sse',
    );
  });
});

/** An adapter whose upstream answers every call with the given Gemini chunks. */
function adapterStreaming(chunks: unknown[]) {
  const text = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join('');
  return adapterReplaying(
    { provider: 'gemini', protocol: 'gemini', baseUrl: 'http://upstream.invalid', apiKey: 'k' },
    text,
  );
}

const request: ProviderRequest = { model: 'gemini-test', messages: [{ role: 'user', content: 'hi' }] };

describe('Gemini stream edge cases', () => {
  it('yields thought parts as reasoning, numbers parallel calls and counts thinking tokens as completion', async () => {
    const parts = await collect(
      adapterStreaming([
        { candidates: [{ content: { role: 'model', parts: [{ text: 'pondering', thought: true }] } }] },
        {
          candidates: [
            {
              content: {
                role: 'model',
                parts: [
                  { functionCall: { name: 'get_weather', args: { city: 'Oslo' } } },
                  { functionCall: { name: 'get_time' } },
                ],
              },
              finishReason: 'STOP',
            },
          ],
          usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 4, thoughtsTokenCount: 6, totalTokenCount: 15 },
        },
      ]).stream(request),
    );
    expect(parts).toEqual([
      { type: 'reasoning-delta', text: 'pondering' },
      { type: 'tool-call-delta', index: 0, id: 'call_0', name: 'get_weather', argumentsDelta: '{"city":"Oslo"}' },
      { type: 'tool-call-delta', index: 1, id: 'call_1', name: 'get_time', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls', rawReason: 'STOP' },
      { type: 'usage', usage: { prompt_tokens: 5, completion_tokens: 10, total_tokens: 15 } },
    ]);
  });

  it('maps a safety stop to content_filter', async () => {
    const parts = await collect(
      adapterStreaming([{ candidates: [{ content: { parts: [{ text: 'I' }] }, finishReason: 'SAFETY' }] }]).stream(
        request,
      ),
    );
    expect(parts.at(-1)).toEqual({ type: 'finish', reason: 'content_filter', rawReason: 'SAFETY' });
  });

  it('treats a blocked prompt as content_filter', async () => {
    const parts = await collect(
      adapterStreaming([{ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } }]).stream(request),
    );
    expect(parts).toEqual([{ type: 'finish', reason: 'content_filter', rawReason: 'PROHIBITED_CONTENT' }]);
  });

  it('turns an error chunk into an HTTP ProviderError and a reasonless end into malformed', async () => {
    await expect(
      collect(adapterStreaming([{ error: { code: 503, message: 'busy', status: 'UNAVAILABLE' } }]).stream(request)),
    ).rejects.toMatchObject({ kind: 'http', status: 503 });
    await expect(
      collect(adapterStreaming([{ candidates: [{ content: { parts: [{ text: 'I' }] } }] }]).stream(request)),
    ).rejects.toMatchObject({ kind: 'malformed' });
  });
});

describe('Gemini images', () => {
  it('sends a data URL as inlineData and an https URL as fileData; the model sees both', async () => {
    const response = await harness.adapter('gemini').generate({ model: 'gemini-test', messages: [imageMessage] });
    expect(response.content).toBe('Simulated reply from gemini-test to: What is in these? [saw 2 image(s)]');
    const body = (await harness.control.requests()).last?.body as { contents: unknown[] };
    expect(body.contents).toEqual([
      {
        role: 'user',
        parts: [
          { text: 'What is in these?' },
          { inlineData: { mimeType: 'image/png', data: pixelPng } },
          { fileData: { fileUri: 'https://images.example.com/cat.webp', mimeType: 'image/webp' } },
        ],
      },
    ]);
  });

  it('answers a JSON-schema response format with conforming JSON', async () => {
    const schema = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' }, minItems: 2 } } };
    const response = await harness.adapter('gemini').generate({
      model: 'gemini-test',
      messages: [{ role: 'user', content: 'Tag my photo' }],
      responseFormat: { type: 'json_schema', json_schema: { name: 'tags', schema } },
    });
    expect(JSON.parse(response.content ?? '')).toEqual({
      tags: ['Simulated tags about: Tag my photo (1)', 'Simulated tags about: Tag my photo (2)'],
    });
  });
});
