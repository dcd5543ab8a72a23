/** The simulator's own contract: authentication and error shapes per protocol, and its control API. */
import { describe, expect, it } from '@jest/globals';
import { useProviderHarness } from './provider-harness.ts';

const harness = useProviderHarness({ beforeEach: ['faults', 'requests'] });

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${harness.simulator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const openAIBody = { model: 'gpt-sim', messages: [{ role: 'user', content: 'hi' }] };
const anthropicBody = { model: 'claude-sim', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
const geminiBody = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

describe('simulator authentication and validation', () => {
  it('answers a missing key with 401 in each protocol’s error shape', async () => {
    const openAI = await post('/v1/chat/completions', openAIBody);
    expect(openAI.status).toBe(401);
    expect(await openAI.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });

    const anthropic = await post('/v1/messages', anthropicBody, { 'anthropic-version': '2023-06-01' });
    expect(anthropic.status).toBe(401);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });

    const gemini = await post('/v1beta/models/gemini-sim:generateContent', geminiBody);
    expect(gemini.status).toBe(401);
    expect(await gemini.json()).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
  });

  it('rejects what the real APIs reject', async () => {
    const noMaxTokens = await post(
      '/v1/messages',
      { model: 'claude-sim', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    );
    expect(noMaxTokens.status).toBe(400);
    expect(await noMaxTokens.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });

    const noVersion = await post('/v1/messages', anthropicBody, { 'x-api-key': 'k' });
    expect(noVersion.status).toBe(400);

    const unknownField = await post(
      '/v1beta/models/gemini-sim:generateContent',
      { ...geminiBody, model: 'x' },
      {
        'x-goog-api-key': 'k',
      },
    );
    expect(unknownField.status).toBe(400);
    expect(await unknownField.json()).toMatchObject({ error: { status: 'INVALID_ARGUMENT' } });

    const choiceWithoutTools = await post(
      '/v1/chat/completions',
      { ...openAIBody, tool_choice: 'auto' },
      { authorization: 'Bearer k' },
    );
    expect(choiceWithoutTools.status).toBe(400);
  });

  it('refuses what Anthropic refuses with thinking on, and takes a tool loop that sends its thinking back', async () => {
    const headers = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const status = async (body: Record<string, unknown>) =>
      (await post('/v1/messages', { ...anthropicBody, max_tokens: 2048, thinking, ...body }, headers)).status;
    expect(await status({ thinking: { type: 'enabled', budget_tokens: 512 } })).toBe(400);
    expect(await status({ max_tokens: 1024 })).toBe(400);
    expect(await status({ temperature: 0.5 })).toBe(400);
    const tools = [{ name: 'get_time', input_schema: { type: 'object' } }];
    expect(await status({ tools, tool_choice: { type: 'any' } })).toBe(400);

    const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} };
    const loop = (assistant: unknown[]) => [
      { role: 'user', content: 'time?' },
      { role: 'assistant', content: assistant },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'noon' }] },
    ];
    expect(await status({ tools, messages: loop([toolUse]) })).toBe(400);
    const signed = { type: 'thinking', thinking: 'Ask the clock.', signature: 'c2ln' };
    expect(await status({ tools, messages: loop([signed, toolUse]) })).toBe(200);
  });

  it('accepts the Gemini key as a query parameter and streams a JSON array without alt=sse', async () => {
    const response = await post('/v1beta/models/gemini-sim:streamGenerateContent?key=k', geminiBody);
    expect(response.status).toBe(200);
    const chunks = (await response.json()) as Array<{
      candidates: Array<{ content: { parts: Array<{ text: string }> } }>;
    }>;
    expect(chunks.map((chunk) => chunk.candidates[0]?.content.parts[0]?.text).join('')).toBe(
      'Simulated reply from gemini-sim to: hi',
    );
  });
});

describe('simulator control API', () => {
  it('counts requests per model and keeps the last one', async () => {
    await post('/v1/chat/completions', openAIBody, { authorization: 'Bearer k' });
    await post('/v1/chat/completions', openAIBody, { authorization: 'Bearer k' });
    await post('/v1beta/models/gemini-sim:generateContent', geminiBody, { 'x-goog-api-key': 'k' });
    const summary = await harness.control.requests();
    expect(summary).toMatchObject({ total: 3, by_model: { 'gpt-sim': 2, 'gemini-sim': 1 } });
    expect(summary.last).toMatchObject({ protocol: 'gemini', model: 'gemini-sim', body: geminiBody });

    await harness.control.resetRequests();
    expect(await harness.control.requests()).toEqual({
      total: 0,
      answered: 0,
      by_model: {},
      last: null,
      rate_limited: 0,
    });
  });

  it('matches faults by protocol and model, in order, and clears them', async () => {
    await harness.control.addFault({ match: { protocol: 'anthropic' }, fault: { status: 529 } });
    const { id } = await harness.control.addFault({
      match: { model: 'gpt-sim' },
      times: 2,
      fault: { status: 503, retry_after: 4 },
    });
    expect(id).toMatch(/\S/);

    const headers = { authorization: 'Bearer k' };
    const first = await post('/v1/chat/completions', openAIBody, headers);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('4');
    expect((await post('/v1/chat/completions', openAIBody, headers)).status).toBe(503);
    expect((await post('/v1/chat/completions', openAIBody, headers)).status).toBe(200);

    const anthropicHeaders = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const overloaded = await post('/v1/messages', anthropicBody, anthropicHeaders);
    expect(overloaded.status).toBe(529);
    expect(await overloaded.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

    await harness.control.clearFaults();
    expect((await post('/v1/messages', anthropicBody, anthropicHeaders)).status).toBe(200);
  });

  it('rejects an invalid fault rule', async () => {
    const response = await fetch(`${harness.simulator.url}/_simulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ fault: { status: 'soon' } }),
    });
    expect(response.status).toBe(400);
  });
});

const keys = {
  openai: { authorization: 'Bearer k' },
  anthropic: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
  gemini: { 'x-goog-api-key': 'k' },
};

/** The text a non-streamed answer carries, per protocol. */
async function answerText(protocol: 'openai' | 'anthropic' | 'gemini', body: unknown): Promise<string> {
  const path = {
    openai: '/v1/chat/completions',
    anthropic: '/v1/messages',
    gemini: '/v1beta/models/gemini-sim:generateContent',
  }[protocol];
  const response = await post(path, body, keys[protocol]);
  const json: unknown = await response.json();
  expect(response.status).toBe(200);
  if (protocol === 'openai')
    return (json as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
  if (protocol === 'anthropic') return (json as { content: Array<{ text: string }> }).content[0]!.text;
  return (json as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]!.content
    .parts[0]!.text;
}

/** The agent router's classification schema: one relevance score per agent. */
const scoresSchema = {
  type: 'object',
  properties: {
    scores: {
      type: 'object',
      properties: {
        coder: {
          type: 'integer',
          minimum: 0,
          maximum: 10,
          description: 'Writes and debugs code: programming, TypeScript, Python, bugs, tests',
        },
        travel: {
          type: 'integer',
          minimum: 0,
          maximum: 10,
          description: 'Plans trips: flights, hotels, itineraries, visas',
        },
        chef: { type: 'integer', minimum: 0, maximum: 10, description: 'Recipes and cooking' },
      },
      required: ['coder', 'travel', 'chef'],
    },
  },
  required: ['scores'],
};

const codingQuestion = 'Help me debug this Python program: the tests fail with a bug';

describe('simulator structured output', () => {
  it('answers a JSON-schema response format with a conforming value in all three protocols', async () => {
    const schema = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        mood: { type: 'string', enum: ['sad', 'happy weather', 'python code'] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 3 },
        priority: { type: 'integer', minimum: 2 },
        done: { type: 'boolean' },
        nothing: { type: 'null' },
        nested: { type: 'object', properties: { count: { type: 'number' } } },
      },
      required: ['title'],
    };
    const message = 'Write python code that sorts a list for me quickly';
    const expected = {
      title: 'Simulated title about: Write python code that sorts a',
      mood: 'python code',
      tags: [
        'Simulated tags about: Write python code that sorts a (1)',
        'Simulated tags about: Write python code that sorts a (2)',
      ],
      priority: 2,
      done: true,
      nothing: null,
      nested: { count: 1 },
    };
    const openAI = await answerText('openai', {
      ...openAIBody,
      messages: [{ role: 'user', content: message }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
    expect(JSON.parse(openAI)).toEqual(expected);

    // Our Anthropic adapter writes the schema into the system prompt (Anthropic has no response_format).
    const anthropic = await answerText('anthropic', {
      ...anthropicBody,
      max_tokens: 500,
      system: `Be brief.\n\nRespond with a single JSON object only, without any text or code fences around it. It must match this JSON schema: ${JSON.stringify(schema)}`,
      messages: [{ role: 'user', content: message }],
    });
    expect(JSON.parse(anthropic)).toEqual(expected);

    const geminiSchema = JSON.parse(JSON.stringify(schema).replaceAll('"object"', '"OBJECT"')) as unknown;
    const gemini = await answerText('gemini', {
      contents: [{ role: 'user', parts: [{ text: message }] }],
      generationConfig: { responseMimeType: 'application/json', responseSchema: geminiSchema },
    });
    expect(JSON.parse(gemini)).toEqual(expected);
    const geminiJsonSchema = await answerText('gemini', {
      contents: [{ role: 'user', parts: [{ text: message }] }],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    expect(JSON.parse(geminiJsonSchema)).toEqual(expected);
  });

  it('answers json_object with some JSON object', async () => {
    const text = await answerText('openai', { ...openAIBody, response_format: { type: 'json_object' } });
    expect(JSON.parse(text)).toEqual({ reply: 'Simulated reply from gpt-sim to: hi' });
    const gemini = await answerText('gemini', {
      ...geminiBody,
      generationConfig: { responseMimeType: 'application/json' },
    });
    expect(JSON.parse(gemini)).toEqual({ reply: 'Simulated reply from gemini-sim to: hi' });
  });

  it('scores the agent whose description overlaps the message most highest', async () => {
    const classify = async (content: string) =>
      JSON.parse(
        await answerText('openai', {
          ...openAIBody,
          messages: [{ role: 'user', content }],
          response_format: { type: 'json_schema', json_schema: { name: 'route', schema: scoresSchema } },
        }),
      ) as { scores: Record<string, number> };
    // debug, python, program (by prefix: "programming"), tests, bug: 5 matches, capped at 10.
    expect(await classify(codingQuestion)).toEqual({ scores: { coder: 10, travel: 0, chef: 0 } });
    // flights, hotels: 2 matches × ceil(10 / 4) = 6; "cooking" matches the chef by itself: 3.
    expect(await classify('Book flights and hotels, and find cooking classes there')).toEqual({
      scores: { coder: 0, travel: 6, chef: 3 },
    });
    expect(await classify('hello there')).toEqual({ scores: { coder: 0, travel: 0, chef: 0 } });
  });
});

describe('simulator agent-loop markers', () => {
  const openAIConversation = (n: string, answered: number) => [
    { role: 'user', content: `Count to three. [[iterations ${n}]]` },
    ...Array.from({ length: answered }, (_, index) => [
      { role: 'assistant', content: `Step ${index + 1} [[CONTINUE]]` },
      { role: 'user', content: 'Continue.' },
    ]).flat(),
  ];

  it('continues until the Nth answer after the directive, found in any user message', async () => {
    const ending = async (n: string, answered: number) =>
      (await answerText('openai', { ...openAIBody, messages: openAIConversation(n, answered) })).split(' ').at(-1);
    expect(await ending('3', 0)).toBe('[[CONTINUE]]');
    expect(await ending('3', 1)).toBe('[[CONTINUE]]');
    expect(await ending('3', 2)).toBe('[[DONE]]');
    expect(await ending('1', 0)).toBe('[[DONE]]');
    expect(await ending('forever', 7)).toBe('[[CONTINUE]]');
    // Without the directive no marker.
    expect(await answerText('openai', openAIBody)).toBe('Simulated reply from gpt-sim to: hi');
  });

  it('does not count tool-calling turns as iterations, in Anthropic and Gemini too', async () => {
    const anthropic = await answerText('anthropic', {
      ...anthropicBody,
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Go [[iterations 2]]' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'noon' }] },
      ],
    });
    expect(anthropic).toBe('Simulated reply from claude-sim with tool result: noon [[CONTINUE]]');
    const anthropicDone = await answerText('anthropic', {
      ...anthropicBody,
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Go [[iterations 2]]' },
        { role: 'assistant', content: 'First [[CONTINUE]]' },
        { role: 'user', content: 'Continue.' },
      ],
    });
    expect(anthropicDone).toBe('Simulated reply from claude-sim to: Continue. [[DONE]]');
    const gemini = await answerText('gemini', {
      contents: [
        { role: 'user', parts: [{ text: 'Go [[iterations 2]]' }] },
        { role: 'model', parts: [{ text: 'First [[CONTINUE]]' }] },
        { role: 'user', parts: [{ text: 'Continue.' }] },
      ],
    });
    expect(gemini).toBe('Simulated reply from gemini-sim to: Continue. [[DONE]]');
  });
});

// A 1×1 transparent PNG.
const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('simulator images', () => {
  it('acknowledges the images of the user message in all three protocols', async () => {
    const openAI = await answerText('openai', {
      ...openAIBody,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
          ],
        },
      ],
    });
    expect(openAI).toBe('Simulated reply from gpt-sim to: What is this? [saw 2 image(s)]');

    const anthropic = await answerText('anthropic', {
      ...anthropicBody,
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
          ],
        },
      ],
    });
    expect(anthropic).toBe('Simulated reply from claude-sim to: What is this? [saw 1 image(s)]');

    const gemini = await answerText('gemini', {
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is this?' },
            { inlineData: { mimeType: 'image/png', data: pixel } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(gemini).toBe('Simulated reply from gemini-sim to: What is this? [saw 2 image(s)]');
  });

  it('rejects a malformed image as the real APIs do', async () => {
    const badUrl = await post(
      '/v1/chat/completions',
      {
        ...openAIBody,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///x' } }] }],
      },
      keys.openai,
    );
    expect(badUrl.status).toBe(400);
    const badType = await post(
      '/v1/messages',
      {
        ...anthropicBody,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: pixel } }],
          },
        ],
      },
      keys.anthropic,
    );
    expect(badType.status).toBe(400);
  });
});
