/**
 * The Responses door through the official `openai` SDK's `responses` methods, unmodified: create, stream, retrieve,
 * delete, input items, conversations kept by `previous_response_id`, `store: false`, function calls, and background
 * mode (polling, a stream read again from `starting_after`, cancel); every route refuses another user's response.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Connection } from '@temporalio/client';
import OpenAI from 'openai';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

const weatherTool: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

let platform: TestPlatform;
let client: OpenAI;
let owner: { key: string; user_id: string };
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  owner = await platform.createKey();
  client = platform.openai(owner.key, { maxRetries: 0 });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

type StreamEvent = OpenAI.Responses.ResponseStreamEvent;

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const held = async (userId: string) =>
  Number((await database.query('select credits_held from users where id = $1', [userId])).rows[0].credits_held);

describe('responses', () => {
  it('creates a Response and reads it back, with its input items', async () => {
    const response = await client.responses.create({
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      input: 'Say hello',
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'gpt-4o-mini',
      background: false,
    });
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toContain('Say hello');
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(response.usage?.input_tokens).toBeGreaterThan(0);
    expect(response.usage?.total_tokens).toBe(
      (response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0),
    );

    const read = await client.responses.retrieve(response.id);
    expect(read).toMatchObject({ id: response.id, status: 'completed', instructions: 'Be brief.' });
    expect(read.output_text).toBe(response.output_text);
    const items = await client.responses.inputItems.list(response.id);
    expect(items.data).toEqual([
      expect.objectContaining({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello' }] }),
    ]);

    // Charged exactly as a chat completion of the same prompt on the same model.
    const completion = await platform.openai(owner.key).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello' },
      ],
    });
    const settled = async (id: string) =>
      Number(
        (
          await database.query(
            `select coalesce(sum(amount), 0) as total from credit_ledger where workflow_id = $1 and kind = 'settle'`,
            [`completion-${id}`],
          )
        ).rows[0].total,
      );
    expect(await settled(response.id)).toBeGreaterThan(0);
    expect(await settled(response.id)).toBe(await settled(completion.id));

    await client.responses.delete(response.id);
    const gone = await client.responses.retrieve(response.id).catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('streams the typed events, numbered from 0, and the SDK’s helper puts them together', async () => {
    const events = await collect(
      await client.responses.create({ model: 'claude-haiku-4-5', input: 'Stream to me', stream: true }),
    );
    expect(events.slice(0, 2).map((event) => event.type)).toEqual(['response.created', 'response.in_progress']);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
      ]),
    );
    const last = events.at(-1)!;
    expect(last.type).toBe('response.completed');
    const text = events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
    expect(text).toContain('Stream to me');

    const final = await client.responses.stream({ model: 'gemini-2.5-flash', input: 'Helper' }).finalResponse();
    expect(final.output_text).toContain('Helper');
    expect((await client.responses.retrieve(final.id)).output_text).toBe(final.output_text);
  });

  it('keeps the conversation for previous_response_id, and keeps nothing with store: false', async () => {
    const first = await client.responses.create({ model: 'gpt-4o-mini', input: 'My name is Ada' });
    await platform.simulator.resetRequests();
    const second = await client.responses.create({
      model: 'gpt-4o-mini',
      previous_response_id: first.id,
      input: 'What is my name?',
    });
    expect(second.previous_response_id).toBe(first.id);
    const sent = (await platform.simulator.requests()).last?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(sent.messages.map((message) => [message.role, message.content])).toEqual([
      ['user', 'My name is Ada'],
      ['assistant', first.output_text],
      ['user', 'What is my name?'],
    ]);

    const unstored = await client.responses.create({ model: 'gpt-4o-mini', input: 'Forget me', store: false });
    expect((unstored as unknown as { store: boolean }).store).toBe(false);
    expect(await client.responses.retrieve(unstored.id).catch((error: unknown) => error)).toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const continued = await client.responses
      .create({ model: 'gpt-4o-mini', previous_response_id: unstored.id, input: 'Hi' })
      .catch((error: unknown) => error);
    expect(continued).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('calls a function and takes its output back', async () => {
    const first = await client.responses.create({
      model: 'gpt-4o-mini',
      input: 'Weather in Paris?',
      tools: [weatherTool],
    });
    const call = first.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error(`no function call in ${JSON.stringify(first.output)}`);
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toHaveProperty('city');
    const second = await client.responses.create({
      model: 'gpt-4o-mini',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c":21}' }],
      tools: [weatherTool],
    });
    expect(second.output_text).toContain('21');

    const streamed = await client.responses
      .stream({ model: 'claude-haiku-4-5', input: 'Weather in Oslo?', tools: [weatherTool] })
      .finalResponse();
    expect(streamed.output.find((item) => item.type === 'function_call')).toMatchObject({
      name: 'get_weather',
      arguments: expect.stringContaining('city'),
    });
  });

  it('refuses bad input in OpenAI’s error shape, changing nothing', async () => {
    const hosted = (await client.responses
      .create({ model: 'gpt-4o-mini', input: 'Hi', tools: [{ type: 'web_search' }] })
      .catch((error: unknown) => error)) as InstanceType<typeof OpenAI.APIError>;
    expect(hosted).toBeInstanceOf(OpenAI.BadRequestError);
    expect(hosted.message).toContain('function tools');
    const background = await client.responses
      .create({ model: 'gpt-4o-mini', input: 'Hi', background: true, store: false })
      .catch((error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
    expect(background).toBeInstanceOf(OpenAI.BadRequestError);
    const noModel = await client.responses
      .create({ model: 'gpt-7', input: 'Hi' })
      .catch((error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
    expect(noModel).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await held(owner.user_id)).toBe(0);
  });
});

describe('background mode', () => {
  it('answers queued at once, runs durably, and is read when done', async () => {
    const queued = await client.responses.create({
      model: 'gpt-4o-mini',
      input: 'In the background',
      background: true,
    });
    expect(queued).toMatchObject({ status: 'queued', background: true });
    const done = await waitFor('the background response to complete', async () => {
      const read = await client.responses.retrieve(queued.id);
      return read.status === 'completed' ? read : null;
    });
    expect(done.output_text).toContain('In the background');
    // Its own kind in the Temporal UI.
    const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
    try {
      const description = await new Client({ connection }).workflow.getHandle(`completion-${queued.id}`).describe();
      expect(description.searchAttributes.TesseraKind).toEqual(['response']);
    } finally {
      await connection.close();
    }
    // And in the operator console's recent requests, with its trace.
    const listed = await waitFor('the console to list the response', async () => {
      const answer = await platform.agents(`/admin/api/requests?limit=50&user_id=${owner.user_id}`, {
        key: platform.masterKey,
      });
      const { requests } = (await answer.json()) as { requests: Array<{ request_id: string; status: string }> };
      // Visibility lags the workflow's close a little.
      return requests.find((request) => request.request_id === queued.id && request.status === 'completed');
    });
    expect(listed.request_id).toBe(queued.id);
  });

  it('reads a background stream again from starting_after, every event once', async () => {
    const stream = await client.responses.create({
      model: 'claude-haiku-4-5',
      input: 'Tell me a long story about durable streams',
      background: true,
      stream: true,
    });
    const seen: StreamEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (event.type === 'response.output_text.delta') break;
    }
    const id = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    expect(seen[0]).toMatchObject({ type: 'response.created', response: { status: 'queued', background: true } });
    const after = seen.at(-1)!.sequence_number;
    const rest = await collect(
      (await client.responses.retrieve(id, { stream: true, starting_after: after })) as AsyncIterable<StreamEvent>,
    );
    const all = [...seen, ...rest];
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
    expect(rest.at(-1)?.type).toBe('response.completed');
    const text = all.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
    expect(text).toBe((await client.responses.retrieve(id)).output_text);
  });

  it('cancels a running background response, settling what it used', async () => {
    await platform.simulator.addFault({
      match: { model: 'gemini-2.5-flash' },
      fault: { stall_after_tokens: 2, stall_ms: 120_000 },
    });
    try {
      const queued = await client.responses.create({
        model: 'gemini-2.5-flash',
        input: 'A long answer, please',
        background: true,
      });
      await waitFor('the response to stream its first tokens', async () => {
        const { rows } = await database.query('select count(*)::int as n from stream_chunks where request_id = $1', [
          queued.id,
        ]);
        return rows[0].n > 1;
      });
      const cancelled = await client.responses.cancel(queued.id);
      expect(cancelled.status).toBe('cancelled');
      expect(await held(owner.user_id)).toBe(0);
      const { rows } = await database.query(
        `select count(*)::int as settlements from credit_ledger where workflow_id = $1 and kind = 'settle'`,
        [`completion-${queued.id}`],
      );
      expect(rows[0].settlements).toBe(1);
      // A sync response is not cancellable.
      const sync = await client.responses.create({ model: 'gpt-4o-mini', input: 'Hi' });
      expect(await client.responses.cancel(sync.id).catch((error: unknown) => error)).toBeInstanceOf(
        OpenAI.BadRequestError,
      );
    } finally {
      await platform.simulator.clearFaults();
    }
  });
});

describe('ownership', () => {
  it('refuses every route on another user’s response with 404', async () => {
    const mine = await client.responses.create({ model: 'gpt-4o-mini', input: 'Mine', background: true });
    const stranger = platform.openai((await platform.createKey(`stranger-${Date.now()}@example.com`)).key, {
      maxRetries: 0,
    });
    const refused = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: unknown) => error,
      );
    expect(await refused(stranger.responses.retrieve(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refused(stranger.responses.inputItems.list(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refused(stranger.responses.cancel(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refused(stranger.responses.delete(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(
      await refused(stranger.responses.create({ model: 'gpt-4o-mini', input: 'Hi', previous_response_id: mine.id })),
    ).toBeInstanceOf(OpenAI.NotFoundError);
    await waitFor(
      'my response to complete',
      async () => (await client.responses.retrieve(mine.id)).status === 'completed',
    );
  });
});
