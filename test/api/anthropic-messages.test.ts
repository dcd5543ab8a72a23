/**
 * The Messages door through Anthropic's official SDK (`@anthropic-ai/sdk`, unmodified): Messages on every wire
 * protocol behind the gateway, streamed and not, tool use round trips, thinking, count_tokens, errors as the SDK's
 * `APIError` subclasses, and the charge of a Message beside a chat completion of the same prompt.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import pg from 'pg';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { pixelPng } from '../providers/provider-harness.ts';

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

// One model per wire protocol behind the door: OpenAI-compatible, Anthropic Messages, Gemini.
const models = ['gpt-4o-mini', 'claude-haiku-4-5', 'gemini-2.5-flash'];

let platform: TestPlatform;
let client: Anthropic;
let apiKey: string;
let database: pg.Client;
/** Serves a PNG on loopback, the host FETCH_ALLOWED_HOSTS lets the URL guard reach. */
let images: Server;

const anthropic = (key: string, options: { bearer?: boolean } = {}) =>
  new Anthropic({
    ...(options.bearer ? { authToken: key, apiKey: null } : { apiKey: key }),
    baseURL: platform.gateway.url,
    maxRetries: 0,
  });

beforeAll(async () => {
  images = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from(pixelPng, 'base64'));
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  const imageHost = `127.0.0.1:${(images.address() as AddressInfo).port}`;
  platform = await startTestPlatform((simulatorUrl) => ({
    FETCH_ALLOWED_HOSTS: `${new URL(simulatorUrl).host},${imageHost}`,
  }));
  apiKey = (await platform.createKey()).key;
  client = anthropic(apiKey);
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await new Promise((resolve) => images?.close(resolve));
});

/** What the ledger settled for a request (its workflow is `completion-<id>`). */
async function settled(requestId: string): Promise<number> {
  const { rows } = await database.query<{ total: string }>(
    `select coalesce(sum(amount), 0) as total from credit_ledger where workflow_id = $1 and kind = 'settle'`,
    [`completion-${requestId}`],
  );
  return Number(rows[0]!.total);
}

describe.each(models)('Messages on %s', (model) => {
  it('answers a Message', async () => {
    const message = await client.messages.create({
      model,
      max_tokens: 200,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model, stop_reason: 'end_turn' });
    expect(message.id).toMatch(/^msg_/);
    expect(message._request_id).toBe(message.id);
    expect(message.content).toEqual([{ type: 'text', text: expect.stringContaining('Say hello'), citations: null }]);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('streams the same answer in Anthropic’s event order', async () => {
    const stream = await client.messages.create({
      model,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Say hello' }],
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    // The SDK passes pings over (the raw stream below has one).
    expect(types.slice(0, 2)).toEqual(['message_start', 'content_block_start']);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.filter((type) => type === 'content_block_delta').length).toBeGreaterThan(1);
    expect(text).toContain('Say hello');

    const raw = await fetch(`${platform.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Say hello' }],
        stream: true,
      }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const names = [...(await raw.text()).matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.at(-1)).toBe('message_stop');
  });

  it('calls a tool and takes its result back, streamed and not', async () => {
    const first = await client.messages.create({
      model,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: { type: 'auto' },
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block) => block.type === 'tool_use');
    if (call?.type !== 'tool_use') throw new Error(`no tool_use block in ${JSON.stringify(first.content)}`);
    expect(call.name).toBe('get_weather');
    expect(call.input).toHaveProperty('city');

    const second = await client.messages.create({
      model,
      max_tokens: 300,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temperature_c":21}' }] },
      ],
      tools: [weatherTool],
    });
    expect(second.stop_reason).toBe('end_turn');
    const answer = second.content.find((block) => block.type === 'text');
    expect(answer?.type === 'text' && answer.text).toContain('21');

    // The SDK's stream helper puts input_json_delta pieces back together into the tool's input.
    const streamed = await client.messages
      .stream({
        model,
        max_tokens: 300,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [weatherTool],
      })
      .finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    const streamedCall = streamed.content.find((block) => block.type === 'tool_use');
    expect(streamedCall).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: expect.any(String) } });
    expect(streamed.usage.output_tokens).toBeGreaterThan(0);
  });
});

describe('thinking', () => {
  it('asks a Claude model for thinking and returns it as a thinking block before the text', async () => {
    await platform.simulator.resetRequests();
    const message = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'Think first' }],
    });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]).toMatchObject({ thinking: expect.stringMatching(/^Simulated reasoning/) });
    // 2,048 tokens fits the low effort's budget (1,024), not the medium one's (8,192).
    expect((await platform.simulator.requests()).last?.body).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });

    const streamed = await client.messages
      .stream({
        model: 'claude-haiku-4-5',
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: [{ role: 'user', content: 'Think first' }],
      })
      .finalMessage();
    expect(streamed.content.map((block) => block.type)).toEqual(['thinking', 'text']);
  });

  it('refuses a thinking budget that leaves no room for the answer, as Anthropic does', async () => {
    const error = await client.messages
      .create({
        model: 'claude-haiku-4-5',
        max_tokens: 1024,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: [{ role: 'user', content: 'Hi' }],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('budget_tokens') },
    });
  });
});

describe('images', () => {
  it('fetches an image given by URL through the URL guard and sends it on as base64; refuses a private address', async () => {
    const imageUrl = `http://${(images.address() as AddressInfo).address}:${(images.address() as AddressInfo).port}/dot.png`;
    await platform.simulator.resetRequests();
    const message = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', source: { type: 'url', url: imageUrl } },
          ],
        },
      ],
    });
    expect(message.type).toBe('message');
    const sent = (await platform.simulator.requests()).last?.body as {
      messages: Array<{ content: Array<{ type: string; source?: unknown }> }>;
    };
    expect(sent.messages[0]!.content).toContainEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: pixelPng },
    });

    const refused = (await client.messages
      .create({
        model: 'claude-haiku-4-5',
        max_tokens: 100,
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'http://10.0.0.1/secret.png' } }] },
        ],
      })
      .catch((error: unknown) => error)) as InstanceType<typeof Anthropic.APIError>;
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused.message).toContain('messages.0.content.0.source.url');
  });
});

describe('sampling', () => {
  it('passes the sampling knobs older clients send (temperature, top_k) on to a Claude model', async () => {
    await platform.simulator.resetRequests();
    // The current SDK's types no longer list them; clients written for earlier API versions send them.
    const legacy = {
      model: 'claude-haiku-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.3,
      top_k: 5,
    } as Anthropic.MessageCreateParamsNonStreaming;
    await client.messages.create(legacy);
    expect((await platform.simulator.requests()).last?.body).toMatchObject({ temperature: 0.3, top_k: 5 });
  });
});

describe('stop sequences', () => {
  it('says which stop sequence ended the answer where the provider says so, streamed and not', async () => {
    // The simulator answers with the text it is asked to say, cut at the first stop sequence in it.
    const request = {
      max_tokens: 100,
      stop_sequences: ['HALT'],
      messages: [{ role: 'user' as const, content: '[[say "one two HALT three"]]' }],
    };
    // A Claude model behind the door: Anthropic's API names the sequence.
    const message = await client.messages.create({ model: 'claude-haiku-4-5', ...request });
    expect([message.stop_reason, message.stop_sequence]).toEqual(['stop_sequence', 'HALT']);
    expect(message.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^one two\s*$/) });
    const streamed = await client.messages.stream({ model: 'claude-haiku-4-5', ...request }).finalMessage();
    expect([streamed.stop_reason, streamed.stop_sequence]).toEqual(['stop_sequence', 'HALT']);
    // OpenAI's API does not tell a stop sequence from a natural end: end_turn, no sequence.
    const other = await client.messages.create({ model: 'gpt-4o-mini', ...request });
    expect([other.stop_reason, other.stop_sequence]).toEqual(['end_turn', null]);
  });
});

describe('count_tokens', () => {
  it('counts a Message’s input tokens as the platform counts them, and 404s an unknown model', async () => {
    const params = {
      model: 'claude-haiku-4-5',
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'How many tokens is this?' }],
    };
    const counted = await client.messages.countTokens(params);
    expect(counted.input_tokens).toBeGreaterThan(5);
    // The count grows with the prompt.
    const longer = await client.messages.countTokens({
      ...params,
      messages: [{ role: 'user', content: 'How many tokens is this? '.repeat(10) }],
    });
    expect(longer.input_tokens).toBeGreaterThan(counted.input_tokens);
    const missing = await client.messages
      .countTokens({ ...params, model: 'no-such-model' })
      .catch((caught: unknown) => caught);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('keys and errors in Anthropic’s shape', () => {
  it('takes the key as x-api-key or as a Bearer token', async () => {
    const message = await anthropic(apiKey, { bearer: true }).messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(message.type).toBe('message');
  });

  it('answers each refusal as the SDK’s error class with Anthropic’s type', async () => {
    type ApiError = InstanceType<typeof Anthropic.APIError>;
    const caught = (promise: Promise<unknown>) =>
      promise.then(
        () => null as unknown as ApiError,
        (error: unknown) => error as ApiError,
      );
    const base = { model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user' as const, content: 'Hi' }] };

    const unauthenticated = await caught(anthropic('te_not_a_key').messages.create(base));
    expect(unauthenticated).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(unauthenticated.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });

    const noModel = await caught(client.messages.create({ ...base, model: 'no-such-model' }));
    expect(noModel).toBeInstanceOf(Anthropic.NotFoundError);
    expect(noModel.error).toMatchObject({
      error: { type: 'not_found_error', message: expect.stringContaining('no-such-model') },
    });

    const missingMaxTokens = await fetch(`${platform.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect({ status: missingMaxTokens.status, body: await missingMaxTokens.json() }).toEqual({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } },
    });

    const serverTool = await caught(
      client.messages.create({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }),
    );
    expect(serverTool).toBeInstanceOf(Anthropic.BadRequestError);
    expect(serverTool.message).toContain('server tools');

    const document = await caught(
      client.messages.create({
        ...base,
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'A note' } }],
          },
        ],
      }),
    );
    expect(document).toBeInstanceOf(Anthropic.BadRequestError);
    expect(document.message).toContain('content block');

    const free = await platform.createKey(`free-${Date.now()}@example.com`, 'free');
    const outsidePlan = await caught(anthropic(free.key).messages.create({ ...base, model: 'claude-sonnet-4-6' }));
    expect(outsidePlan).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(outsidePlan.error).toMatchObject({ error: { type: 'permission_error' } });
  });
});

describe('charges', () => {
  it('charges a Message exactly as a chat completion of the same prompt on the same model', async () => {
    const prompt = 'Charge me as a completion would';
    const message = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: prompt }],
    });
    const completion = await platform.openai(apiKey).chat.completions.create({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: prompt }],
    });
    expect(message.usage.input_tokens).toBe(completion.usage?.prompt_tokens);
    expect(message.usage.output_tokens).toBe(completion.usage?.completion_tokens);
    const charged = await settled(message.id);
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBe(await settled(completion.id));
    // And the request is one an operator and its owner find by the id the client holds.
    const trace = (await (await platform.fetch(`/api/v1/requests/${message.id}`, { key: apiKey })).json()) as {
      status: string;
      workflow_id: string;
    };
    expect(trace).toMatchObject({ status: 'completed', workflow_id: `completion-${message.id}` });
    const stranger = await platform.createKey(`stranger-${Date.now()}@example.com`);
    expect((await platform.fetch(`/api/v1/requests/${message.id}`, { key: stranger.key })).status).toBe(404);
  });
});

// Last: provider faults may open breakers the tests above would meet.
describe('providers failing', () => {
  it('answers 502 api_error when every provider fails, before any token', async () => {
    await platform.simulator.addFault({ fault: { status: 503 } });
    try {
      const error = (await client.messages
        .create({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((caught: unknown) => caught)) as InstanceType<typeof Anthropic.APIError>;
      expect(error).toBeInstanceOf(Anthropic.InternalServerError);
      expect(error.status).toBe(502);
      expect(error.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('ends a stream cut after its first tokens with an error event, never a normal end', async () => {
    await platform.simulator.addFault({ match: { model: 'gemini-2.5-flash' }, fault: { cut_after_tokens: 2 } });
    try {
      const stream = await client.messages.create({
        model: 'gemini-2.5-flash',
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Tell me a long story about streams' }],
        stream: true,
      });
      const types: string[] = [];
      const ended = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().catch((caught: unknown) => caught);
      expect(ended).toBeInstanceOf(Anthropic.APIError);
      expect(types).toContain('content_block_delta');
      expect(types).not.toContain('message_stop');
    } finally {
      await platform.simulator.clearFaults();
    }
  });
});
