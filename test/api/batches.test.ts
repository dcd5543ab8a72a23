/**
 * The Batch API through the official `openai` SDK's `files` and `batches` methods, unmodified: upload a JSONL file of
 * requests, create a batch, poll it to `completed`, read its output and error files; embeddings; a batch whose lines
 * do not fit its endpoint fails validation naming them; a cancel mid-way keeps the lines done and runs (and charges)
 * no other; a batch past its window expires; another user's batch is a 404 on every route. Each line is charged once,
 * at the plan's batch rate.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let client: OpenAI;
let userId: string;
let database: pg.Pool;

beforeAll(async () => {
  platform = await startTestPlatform();
  const key = await platform.createKey();
  userId = key.user_id;
  client = platform.openai(key.key, { maxRetries: 0 });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const chatLine = (customId: string, content: string, model = 'gpt-4o-mini') =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content }], max_tokens: 50 },
  });

const upload = async (lines: string[], to = client) =>
  to.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'requests.jsonl'), purpose: 'batch' });

const ended = ['completed', 'failed', 'expired', 'cancelled'];
const settled = (id: string, to = client) =>
  waitFor(
    `batch ${id} to end`,
    async () => {
      const batch = await to.batches.retrieve(id);
      return ended.includes(batch.status) ? batch : null;
    },
    120_000,
  );

/** Uploads the lines, creates a batch of them on `endpoint`, and waits for it to end. */
const runBatch = async (lines: string[], endpoint: string) =>
  settled(
    (
      await client.batches.create({
        input_file_id: (await upload(lines)).id,
        endpoint: endpoint as OpenAI.Batches.BatchCreateParams['endpoint'],
        completion_window: '24h',
      })
    ).id,
  );

/** A line of an output or error file, as OpenAI's Batch API writes them. */
interface OutputLine {
  id: string;
  custom_id: string;
  // The body is the endpoint's answer (a chat completion, a list of embeddings): read field by field below. Null only
  // on lines not run (the error file's), which these tests read through `error`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  response: { status_code: number; request_id: string; body: any };
  error: { code: string; message: string } | null;
}

const linesOf = async (fileId: string | null | undefined, from = client): Promise<OutputLine[]> => {
  if (!fileId) return [];
  const text = await (await from.files.content(fileId)).text();
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as OutputLine);
};

const ledger = async (batchId: string) =>
  (
    await database.query<{ workflow_id: string; kind: string; amount: number }>(
      `select workflow_id, kind, amount from credit_ledger where workflow_id like $1 order by id`,
      [`batch-${batchId}/%`],
    )
  ).rows;

describe('batches', () => {
  it('runs every line of a file once, answers it in the output file, and charges each line once at the batch rate', async () => {
    const file = await upload([
      chatLine('first', 'Say one'),
      chatLine('second', 'Say two'),
      chatLine('third', 'Say three'),
      chatLine('unknown-model', 'Say four', 'no-such-model'),
    ]);
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { purpose: 'test' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      endpoint: '/v1/chat/completions',
      input_file_id: file.id,
      completion_window: '24h',
      metadata: { purpose: 'test' },
    });
    expect(created.id).toMatch(/^batch_/);

    const batch = await settled(created.id);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 4, completed: 3, failed: 1 });
    expect(batch.in_progress_at).toEqual(expect.any(Number));
    expect(batch.finalizing_at).toEqual(expect.any(Number));
    expect(batch.completed_at).toEqual(expect.any(Number));
    expect(batch.usage?.input_tokens).toBeGreaterThan(0);

    const output = await linesOf(batch.output_file_id);
    expect(output.map((line) => line.custom_id)).toEqual(['first', 'second', 'third']);
    for (const line of output) {
      expect(line).toMatchObject({ error: null, response: { status_code: 200, request_id: expect.any(String) } });
      expect(line.response.body).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini' });
    }
    expect(output[0]!.response.body.choices[0].message.content).toContain('Say one');
    const errors = await linesOf(batch.error_file_id);
    expect(errors).toEqual([
      expect.objectContaining({
        custom_id: 'unknown-model',
        response: expect.objectContaining({
          status_code: 404,
          body: { error: expect.objectContaining({ type: 'model_not_found' }) },
        }),
      }),
    ]);
    const outputFile = await client.files.retrieve(batch.output_file_id!);
    expect(outputFile).toMatchObject({ purpose: 'batch_output', filename: `${batch.id}_output.jsonl` });

    // One hold and one settlement per answered line; the settlement at half the model's rate (plans.yaml, batches).
    const entries = await ledger(batch.id);
    const settlements = entries.filter((entry) => entry.kind === 'settle');
    expect(settlements.map((entry) => entry.workflow_id).sort()).toEqual(
      [1, 2, 3].map((line) => `batch-${batch.id}/${line}`),
    );
    const usage = output.map((line) => line.response.body.usage.total_tokens as number);
    expect(settlements.map((entry) => Number(entry.amount)).sort()).toEqual(
      usage.map((tokens) => Math.max(1, Math.ceil((tokens * 4 * 0.5) / 1000))).sort(),
    );
    const [account] = (
      await database.query<{ held: number }>('select credits_held as held from users where id = $1', [userId])
    ).rows;
    expect(Number(account!.held)).toBe(0);

    const listed = await client.batches.list({ limit: 1 });
    expect(listed.data.map((entry) => entry.id)).toEqual([batch.id]);
  });

  it('embeds in a batch', async () => {
    const batch = await runBatch(
      ['alpha', 'beta'].map((text) =>
        JSON.stringify({
          custom_id: text,
          method: 'POST',
          url: '/v1/embeddings',
          body: { model: 'text-embedding-3-small', input: text },
        }),
      ),
      '/v1/embeddings',
    );
    expect([batch.status, batch.request_counts]).toEqual(['completed', { total: 2, completed: 2, failed: 0 }]);
    const output = await linesOf(batch.output_file_id);
    expect(output.map((line) => line.custom_id).sort()).toEqual(['alpha', 'beta']);
    expect(output[0]!.response.body).toMatchObject({ object: 'list', model: 'text-embedding-3-small' });
    expect(output[0]!.response.body.data[0].embedding.length).toBeGreaterThan(0);
  });

  it('answers Anthropic Messages in a batch, each body the Message the door answers', async () => {
    const message = (customId: string, content: unknown, model = 'claude-sonnet-4-6') =>
      JSON.stringify({
        custom_id: customId,
        method: 'POST',
        url: '/v1/messages',
        body: { model, max_tokens: 50, messages: [{ role: 'user', content }] },
      });
    const batch = await runBatch(
      [message('hello', 'Say hello'), message('other-model', 'Say more', 'gpt-4o-mini')],
      '/v1/messages',
    );
    expect([batch.status, batch.request_counts]).toEqual(['completed', { total: 2, completed: 2, failed: 0 }]);
    const output = await linesOf(batch.output_file_id);
    expect(output.map((line) => line.custom_id)).toEqual(['hello', 'other-model']);
    expect(output[0]!.response.body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: expect.stringContaining('Say hello') }],
    });
    expect(output[0]!.response.body.id).toMatch(/^msg_/);

    // An image by URL is not fetched in a batch: the line is named, nothing runs.
    const byUrlLines = [
      message('image', [
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        { type: 'text', text: 'What is this?' },
      ]),
    ];
    const refused = await runBatch(byUrlLines, '/v1/messages');
    expect(refused.status).toBe('failed');
    expect(refused.errors?.data).toEqual([
      expect.objectContaining({ line: 1, message: expect.stringContaining('base64') }),
    ]);
  });

  it('answers Responses in a batch, each body the Response the door answers, none stored', async () => {
    const response = (customId: string, body: Record<string, unknown>) =>
      JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/responses', body });
    const batch = await runBatch(
      [
        response('plain', { model: 'gpt-4o-mini', input: 'Say plain', max_output_tokens: 40 }),
        response('instructed', {
          model: 'gpt-4o-mini',
          instructions: 'Be brief',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'Say instructed' }] }],
        }),
      ],
      '/v1/responses',
    );
    expect([batch.status, batch.request_counts]).toEqual(['completed', { total: 2, completed: 2, failed: 0 }]);
    const output = await linesOf(batch.output_file_id);
    expect(output[0]!.response.body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'gpt-4o-mini',
      store: false,
      output_text: expect.stringContaining('Say plain'),
    });
    expect(output[0]!.response.body.id).toMatch(/^resp_/);
    // Not kept: the Responses API does not know it.
    expect(
      await client.responses.retrieve(output[0]!.response.body.id).catch((error: unknown) => error),
    ).toBeInstanceOf(OpenAI.NotFoundError);

    const continuingLines = [
      response('continues', { model: 'gpt-4o-mini', input: 'More', previous_response_id: 'resp_x' }),
    ];
    const refused = await runBatch(continuingLines, '/v1/responses');
    expect(refused.status).toBe('failed');
    expect(refused.errors?.data).toEqual([expect.objectContaining({ line: 1, param: 'previous_response_id' })]);
  });

  it('fails validation naming every line that does not fit the endpoint, and runs none', async () => {
    const batch = await runBatch(
      [
        chatLine('ok', 'Fine'),
        JSON.stringify({
          custom_id: 'wrong-url',
          method: 'POST',
          url: '/v1/embeddings',
          body: { model: 'x', input: 'y' },
        }),
        JSON.stringify({ custom_id: 'no-messages', method: 'POST', url: '/v1/chat/completions', body: { model: 'x' } }),
      ],
      '/v1/chat/completions',
    );
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data).toEqual([
      expect.objectContaining({ line: 2, param: 'url', message: expect.stringContaining('/v1/embeddings') }),
      expect.objectContaining({ line: 3, message: expect.stringContaining('body.messages') }),
    ]);
    expect(await ledger(batch.id)).toEqual([]);
  });

  it('refuses what it cannot run, with the documented error', async () => {
    const file = await upload([chatLine('a', 'x')]);
    const refused = (body: Record<string, unknown>) =>
      client.batches.create(body as unknown as OpenAI.Batches.BatchCreateParams).catch((error: unknown) => error);
    expect(
      await refused({ input_file_id: file.id, endpoint: '/v1/images/generations', completion_window: '24h' }),
    ).toBeInstanceOf(OpenAI.BadRequestError);
    expect(
      await refused({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '1h' }),
    ).toBeInstanceOf(OpenAI.BadRequestError);
    expect(
      await refused({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' }),
    ).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('stops at a cancel: the lines done stay in the output, the rest are not run and not charged', async () => {
    // Each answer takes a second and a half; the business plan runs many lines at once, so the file is long.
    await platform.simulator.addFault({ match: { model: 'gpt-4o-mini' }, fault: { latency_ms: 1_500 } });
    try {
      const count = 400;
      const file = await upload(
        Array.from({ length: count }, (_, index) => chatLine(`line-${index + 1}`, `Line ${index + 1}`)),
      );
      const created = await client.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      await waitFor('some lines to be answered', async () => {
        const batch = await client.batches.retrieve(created.id);
        return (batch.request_counts?.completed ?? 0) > 0;
      });
      const cancelling = await client.batches.cancel(created.id);
      expect(cancelling.status).toBe('cancelling');
      const batch = await settled(created.id);
      expect(batch.status).toBe('cancelled');
      expect(batch.cancelled_at).toEqual(expect.any(Number));
      const done = batch.request_counts!.completed;
      expect(done).toBeGreaterThan(0);
      expect(done).toBeLessThan(count);

      const output = await linesOf(batch.output_file_id);
      const errors = await linesOf(batch.error_file_id);
      expect(output).toHaveLength(done);
      expect(errors).toHaveLength(count - done);
      expect(errors.every((line) => line.error?.code === 'batch_cancelled' && line.response === null)).toBe(true);
      // Every line appears once, in one file or the other.
      const ids = [...output, ...errors].map((line) => line.custom_id as string).sort();
      expect(ids).toEqual(Array.from({ length: count }, (_, index) => `line-${index + 1}`).sort());
      // Only the lines answered were charged.
      const settlements = (await ledger(batch.id)).filter((entry) => entry.kind === 'settle');
      expect(settlements).toHaveLength(done);
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('is the owner’s only', async () => {
    const file = await upload([chatLine('a', 'Mine')]);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const other = platform.openai((await platform.createKey()).key);
    const notFound = (promise: Promise<unknown>) =>
      promise.then(
        () => 'found',
        (error: unknown) => error,
      );
    expect(await notFound(other.batches.retrieve(batch.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await notFound(other.batches.cancel(batch.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await other.batches.list()).data).toEqual([]);
    // Nor may another user run a batch of this user's file.
    expect(
      await notFound(
        other.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
      ),
    ).toBeInstanceOf(OpenAI.NotFoundError);
    const done = await settled(batch.id);
    expect(await notFound(other.files.content(done.output_file_id!))).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('a batch under a provider’s request limit', () => {
  it('takes what the limit leaves: no 429, and the requests someone waits on keep being answered', async () => {
    // An account on gpt-4o-mini alone (one candidate: OpenAI), and OpenAI allowing 8 requests per 2 s, stated on
    // every answer. A batch leaves a fifth of that (plans.yaml, batches.provider_reserve) to synchronous requests.
    const owner = await platform.createKey();
    const changed = await platform.fetch(`/api/v1/account/${owner.user_id}`, {
      method: 'PATCH',
      key: platform.masterKey,
      body: JSON.stringify({ custom_limits: { models: ['gpt-4o-mini'] } }),
    });
    expect(changed.status).toBe(200);
    const mine = platform.openai(owner.key, { maxRetries: 0 });
    await platform.simulator.setRateLimits([{ protocol: 'openai', requests: 8, window_ms: 2_000 }]);
    await platform.simulator.resetRequests();
    try {
      const lines = Array.from({ length: 24 }, (_, index) => chatLine(`line-${index}`, `Say ${index}`));
      const file = await upload(lines, mine);
      const created = await mine.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      // While it runs, two synchronous requests of the account (as many as the reserve, 2 of 8, holds in one window):
      // when the batch is first seen to have answered lines, and again past its half.
      const answered: string[] = [];
      let seen = 0;
      // Lines that wait for the window are shown as waiting: on the batch, and on /metrics beside the capacity queue.
      let waitingSeen = 0;
      let gauge = '';
      const batch = await waitFor(
        'the batch to end',
        async () => {
          const now = await mine.batches.retrieve(created.id);
          const done = now.request_counts?.completed ?? 0;
          const waiting = (now as { lines_waiting?: { count: number; model: string } }).lines_waiting;
          if (waiting && !gauge) {
            waitingSeen = waiting.count;
            expect(waiting.model).toBe('gpt-4o-mini');
            const metrics = await (await platform.fetch('/metrics')).text();
            gauge =
              metrics
                .split('\n')
                .find((row) =>
                  row.startsWith('tessera_capacity_queue_waiting{kind="batch-line",model="gpt-4o-mini"'),
                ) ?? '';
          }
          if (done > seen && answered.length < 2 && now.status === 'in_progress') {
            seen = Math.max(done, 12);
            const completion = await mine.chat.completions.create({
              model: 'gpt-4o-mini',
              messages: [{ role: 'user', content: 'Someone waits for this' }],
            });
            answered.push(completion.model);
          }
          return ended.includes(now.status) ? now : null;
        },
        60_000,
      );
      expect(batch.status).toBe('completed');
      expect(batch.request_counts).toEqual({ total: 24, completed: 24, failed: 0 });
      expect(waitingSeen).toBeGreaterThan(0);
      expect(gauge).toMatch(/priority="low",plan="business"\} [1-9]/);
      expect(batch).not.toHaveProperty('lines_waiting');
      expect(answered.length).toBeGreaterThan(0);
      expect(answered.every((model) => model === 'gpt-4o-mini')).toBe(true);
      // The provider never had to refuse: the batch waited for each window instead.
      const requests = await platform.simulator.requests();
      expect(requests.rate_limited).toBe(0);
      expect(requests.total).toBe(24 + answered.length);
      const output = await linesOf(batch.output_file_id, mine);
      expect(output.map((line) => line.response.status_code)).toEqual(lines.map(() => 200));
    } finally {
      await platform.simulator.clearRateLimits();
    }
  });
});

describe('a batch past its window', () => {
  let short: TestPlatform;

  beforeAll(async () => {
    // The window a deployment grants (BATCH_WINDOW_SECONDS) is made short here; answers take longer than it.
    short = await startTestPlatform({ BATCH_WINDOW_SECONDS: '4' });
  });

  afterAll(async () => {
    await short?.close();
  });

  it('expires: the lines answered stay in the output, the rest are named batch_expired', async () => {
    const key = await short.createKey(undefined, 'free');
    const owner = short.openai(key.key);
    await short.simulator.addFault({ fault: { latency_ms: 1_500 } });
    const count = 40;
    const file = await owner.files.create({
      file: await toFile(
        Buffer.from(
          Array.from({ length: count }, (_, index) => chatLine(`line-${index + 1}`, `Line ${index}`)).join('\n'),
        ),
        'requests.jsonl',
      ),
      purpose: 'batch',
    });
    const created = await owner.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await settled(created.id, owner);
    expect(batch.status).toBe('expired');
    expect(batch.expired_at).toEqual(expect.any(Number));
    const done = batch.request_counts!.completed;
    expect(done).toBeLessThan(count);
    const errorText = await (await owner.files.content(batch.error_file_id!)).text();
    const errors = errorText
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { error: { code: string } | null });
    expect(errors).toHaveLength(count - done);
    expect(errors.every((line) => line.error?.code === 'batch_expired')).toBe(true);
  });
});
