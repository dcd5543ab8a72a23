/**
 * Background Responses survive the whole platform: SIGKILL `npm start` while background responses are running and
 * one was just queued, start it again, and each finishes by itself, charged once, nothing left held; a client that
 * was reading one's stream reads the rest again from the last event it saw (`starting_after`), every event once. The
 * official `openai` SDK is the client; the official `@anthropic-ai/sdk` also reaches the same `npm start` (the doors'
 * own tests run on the in-process test platform).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import {
  createBusinessKey,
  platformSetup,
  sqlOnce,
  startPlatformProcess,
  tearDownPlatform,
  type PlatformProcess,
  type PlatformSetup,
} from '../helpers/platform-process.ts';
import { waitFor } from '../helpers/wait.ts';

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[responses-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  // Every answer streams two tokens, then stalls: the platform is killed while the responses run.
  await simulatorControl(simulator.url).addFault({ fault: { stall_after_tokens: 2, stall_ms: 6_000 } });
  setup = await platformSetup('responses-kill', simulator.url);
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

type StreamEvent = OpenAI.Responses.ResponseStreamEvent;

it('finishes every background response after a SIGKILL of the whole platform, each charged once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'responses-kill');
  const client = new OpenAI({ apiKey: key, baseURL: `${setup.apiUrl}/v1`, maxRetries: 0 });
  // The Messages door on npm start as shipped, streamed and not (the simulator stalls each answer a few seconds).
  const anthropic = new Anthropic({ apiKey: key, baseURL: setup.apiUrl, maxRetries: 0 });
  const [message, streamed] = await Promise.all([
    anthropic.messages.create({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    anthropic.messages
      .stream({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Streamed' }] })
      .finalMessage(),
  ]);
  expect([message.type, message.stop_reason, streamed.stop_reason]).toEqual(['message', 'end_turn', 'end_turn']);
  expect(streamed.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Streamed') });

  // One streamed: read until its first text arrives.
  const stream = await client.responses.create({
    model: 'gpt-4o-mini',
    input: 'A streamed story that outlives its platform',
    background: true,
    stream: true,
  });
  const seen: StreamEvent[] = [];
  for await (const event of stream) {
    seen.push(event);
    if (event.type === 'response.output_text.delta') break;
  }
  const streamedId = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
  // Two polled ones, running; and one created just before the kill, still queued or barely started.
  const polled = await Promise.all(
    ['First polled', 'Second polled'].map((input) =>
      client.responses.create({ model: 'gpt-4o-mini', input, background: true }),
    ),
  );
  await waitFor('the polled responses to run', async () => {
    const rows = await sql<{ status: string }>('select status from model_responses where id = any($1)', [
      polled.map((response) => response.id),
    ]);
    return rows.every((row) => row.status === 'in_progress');
  });
  const last = await client.responses.create({ model: 'gpt-4o-mini', input: 'Queued at the kill', background: true });
  expect(last.status).toBe('queued');
  await platform.kill();
  log(`killed with ${streamedId}, ${polled.map((response) => response.id).join(', ')} running and ${last.id} queued`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const ids = [streamedId, ...polled.map((response) => response.id), last.id];
  const done = await waitFor(
    'every response to complete after the restart',
    async () => {
      const answers = await Promise.all(ids.map((id) => client.responses.retrieve(id)));
      return answers.every((answer) => answer.status === 'completed') ? answers : null;
    },
    180_000,
  );
  expect(done.map((answer) => answer.output_text)).toEqual([
    expect.stringContaining('A streamed story'),
    expect.stringContaining('First polled'),
    expect.stringContaining('Second polled'),
    expect.stringContaining('Queued at the kill'),
  ]);

  // Each charged once, nothing held.
  const ledger = await sql<{ workflow_id: string; kind: string }>(
    `select workflow_id, kind from credit_ledger where user_id = $1 and kind in ('reserve', 'settle') order by id`,
    [userId],
  );
  for (const id of ids) {
    expect([id, ledger.filter((row) => row.workflow_id === `completion-${id}`).map((row) => row.kind)]).toEqual([
      id,
      ['reserve', 'settle'],
    ]);
  }
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);

  // The stream read again after the last event the client saw: the rest, every event once, to the end.
  const rest: StreamEvent[] = [];
  const resumed = await client.responses.retrieve(streamedId, {
    stream: true,
    starting_after: seen.at(-1)!.sequence_number,
  });
  for await (const event of resumed as AsyncIterable<StreamEvent>) rest.push(event);
  const all = [...seen, ...rest];
  expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
  expect(rest.at(-1)?.type).toBe('response.completed');
  const text = all.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
  expect(text).toBe(done[0]!.output_text);
  passed = true;
}, 480_000);
