/**
 * The agent service's chat through HTTP (spec 4.1, 6): routed turns with every event kind in order, the router's
 * confidence and its keyword fallback, agent loops (three iterations, continuing as new, bounds, cancellation),
 * approvals (approved, rejected, expired, refused to others and twice), re-attaching, the external API, and
 * hostile input. Mail goes to a real SMTP server run in the test.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { agentStreamEvents, type AgentStreamEventName } from '../../api/agents/routes/chat/events.ts';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let smtp: TestSmtp;
const mailsTo = (to: string) => smtp.received.filter((mail) => mail.to.includes(to));
let key: string;
let otherKey: string;
let opsAgent: string;

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({
    SMTP_URL: smtp.url,
    AGENT_APPROVAL_TIMEOUT: '4s',
    AGENT_LOOP_ITERATIONS_PER_RUN: '2',
    CHAT_MAX_TOOL_ROUNDS: '6',
  });
  key = (await platform.createKey()).key;
  otherKey = (await platform.createKey()).key;
  // A custom agent with a tool that needs approval (send_email), a plan, a calculator and memory.
  opsAgent = await createCustomAgent(platform, key, {
    name: 'Ops',
    description: 'Operations helper that plans, calculates and sends e-mail',
    system_prompt: 'You are an operations assistant.',
    tools: ['update_plan', 'calculator', 'send_email', 'save_memory'],
  });
});

afterAll(async () => {
  await platform?.close();
  await smtp?.close();
});

async function json(response: Response): Promise<Json> {
  return (await response.json()) as Json;
}

const newSession = () => `web:${randomUUID()}`;

interface Received {
  id: string | undefined;
  data: Json | '[DONE]';
}

/** Reads an agent stream event by event (the tests act between events). */
class StreamReader {
  readonly events: Received[] = [];
  private readonly iterator: AsyncIterator<{ data: string; id?: string }>;

  constructor(response: Response) {
    const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    this.iterator = events[Symbol.asyncIterator]();
  }

  /** Reads until an event of `type` (or [DONE]) arrives; returns it. */
  async until(type: string): Promise<Received['data']> {
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) throw new Error(`the stream ended before ${type}`);
      const data = next.value.data === '[DONE]' ? '[DONE]' : (JSON.parse(next.value.data) as Json);
      this.events.push({ id: next.value.id, data });
      if (data === '[DONE]' ? type === '[DONE]' : data.type === type) return data;
    }
  }

  async cancel(): Promise<void> {
    await this.iterator.return?.();
  }

  async rest(): Promise<Received[]> {
    await this.until('[DONE]');
    return this.events;
  }
}

async function open(path: string, body: Json, apiKey = key): Promise<StreamReader> {
  const response = await platform.agents(path, { method: 'POST', key: apiKey, body: JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  return new StreamReader(response);
}

async function stream(sessionId: string, body: Json, apiKey = key): Promise<Json[]> {
  const reader = await open(`/chat/stream/${sessionId}`, body, apiKey);
  const events = await reader.rest();
  return events.map((event) => event.data).filter((data): data is Json => data !== '[DONE]');
}

/** Every payload matches its documented schema. */
function expectDocumented(events: Json[]): void {
  for (const event of events) {
    const schema = agentStreamEvents[event.type as AgentStreamEventName];
    expect(schema).toBeDefined();
    expect(schema.safeParse(event).success).toBe(true);
  }
}

const kinds = (events: Json[]) => events.map((event) => (event.type === 'tool' ? `tool:${event.status}` : event.type));

describe('routed chat', () => {
  it('streams routed, memories_loaded, plan events, tools, tokens and cost in order, ending with [DONE]', async () => {
    const added = await platform.agents('/memory/add', {
      method: 'POST',
      key,
      body: JSON.stringify({ content: 'The quarterly budget review happens in March', importance: 0.9 }),
    });
    expect(added.status).toBe(201);
    const message = [
      'Plan the quarterly budget review.',
      call('update_plan', {
        steps: [
          { title: 'Add up costs', status: 'in_progress' },
          { title: 'Write summary', status: 'pending' },
        ],
      }),
      call('calculator', { expression: '1200 + 345' }),
      call('update_plan', {
        steps: [
          { title: 'Add up costs', status: 'completed' },
          { title: 'Write summary', status: 'completed' },
        ],
      }),
    ].join(' ');
    const events = await stream(newSession(), { message, preferred_agents: [opsAgent] });
    expectDocumented(events);
    expect(kinds(events)).toEqual([
      'routed',
      'memories_loaded',
      'tool:calling',
      'tool:done',
      'plan_created',
      'tool:calling',
      'tool:done',
      'tool:calling',
      'tool:done',
      'plan_step',
      'plan_step',
      'plan_done',
      ...events.filter((event) => event.type === 'token').map(() => 'token'),
      'cost',
    ]);
    expect(events[0]).toMatchObject({ agent_id: opsAgent, confidence: 1, method: 'preferred' });
    expect(events[1]!.memories.map((memory: Json) => memory.content)).toContain(
      'The quarterly budget review happens in March',
    );
    expect(events.find((event) => event.tool === 'calculator' && event.status === 'done')).toMatchObject({ ok: true });
    // The memories found are in what the agent read: its system prompt, sent with every call of the turn.
    const prompt = ((await platform.simulator.requests()).last?.body as { messages?: Json[] } | undefined)
      ?.messages?.[0];
    expect(prompt).toMatchObject({ role: 'system' });
    expect(prompt!.content).toContain('The quarterly budget review happens in March');
    const cost = events.at(-1)!;
    expect(cost.input_tokens).toBeGreaterThan(0);
    expect(cost.output_tokens).toBeGreaterThan(0);
    expect(cost.cost_usd).toBeGreaterThan(0);
    expect(cost.credits).toBeGreaterThan(0);
  });

  it('routes by the fast model with a confidence computed from its scores', async () => {
    const sessionId = newSession();
    const events = await stream(sessionId, {
      message: 'Please debug my python function: it raises an error',
    });
    // The session's usage counts the routing call too: more credits than the turn's own cost event.
    const usage = await json(await platform.agents(`/usage/${sessionId}`, { key }));
    expect(usage.credits).toBeGreaterThan(events.at(-1)!.credits);
    expect(events[0]).toMatchObject({ type: 'routed', agent_id: 'coder', method: 'model' });
    expect(events[0]!.confidence).toBeGreaterThan(0.2);
    expect(events[0]!.confidence).toBeLessThanOrEqual(1);
    const other = await stream(newSession(), { message: 'Translate this sentence into French: good morning' });
    expect(other[0]).toMatchObject({ agent_id: 'translator', method: 'model' });
    expect(other[0]!.confidence).not.toBe(events[0]!.confidence);
  });

  it('falls back to keyword routing when the router model does not answer', async () => {
    // The router's call is the next model call: a 400 from upstream is not failed over, so no model answers it.
    await platform.simulator.addFault({ times: 1, fault: { status: 400 } });
    try {
      const events = await stream(newSession(), {
        message: 'translate into spanish please',
        preferred_agents: ['writer', 'translator', 'coder'],
      });
      expect(events[0]).toMatchObject({ type: 'routed', agent_id: 'translator', method: 'keywords' });
      expect(events[0]!.confidence).toBeGreaterThan(1 / 3);
      expect(events.at(-1)!.type).toBe('cost');
    } finally {
      await platform.simulator.clearFaults();
    }
  });

  it('answers a call to a tool the agent does not have as an unknown tool, and runs nothing', async () => {
    const events = await stream(newSession(), {
      message: `Run this for me ${call('code_execute', { language: 'python', code: 'print(1)' })}`,
      preferred_agents: ['writer'],
    });
    const done = events.find((event) => event.type === 'tool' && event.status === 'done');
    expect(done).toMatchObject({ tool: 'code_execute', ok: false });
    expect(String(done!.result)).toContain('no tool named code_execute');
    expect(events.at(-1)!.type).toBe('cost');
  });

  it('refuses oversize messages and images, bad images and unknown agents, starting nothing', async () => {
    const sessionId = newSession();
    const post = (body: Json) =>
      platform.agents(`/chat/stream/${sessionId}`, { method: 'POST', key, body: JSON.stringify(body) });
    expect((await post({ message: 'x'.repeat(32_001) })).status).toBe(400);
    expect((await post({ message: 'hi', image_data: 'not base64!' })).status).toBe(400);
    expect((await post({ message: 'hi', image_data: Buffer.from('plain text').toString('base64') })).status).toBe(400);
    const huge = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(900_000)]);
    expect([400, 413]).toContain((await post({ message: 'hi', image_data: huge.toString('base64') })).status);
    expect((await post({ message: 'hi', preferred_agents: ['nobody'] })).status).toBe(400);
    expect((await post({ message: 'hi', extra: true })).status).toBe(400);
    const history = await platform.agents(`/history/${sessionId}`, { key });
    expect(history.status).toBe(404);
  });

  it('sends image_data to a vision-capable model: the agent’s own, or AGENT_VISION_MODEL', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const text = (events: Json[]) =>
      events
        .filter((event) => event.type === 'token')
        .map((event) => event.text)
        .join('');
    const seen = await stream(newSession(), {
      message: 'What is in this picture?',
      image_data: png,
      preferred_agents: ['writer'],
    });
    expect(seen[0]).toMatchObject({ agent_id: 'writer', model: 'claude-sonnet-4-6' });
    expect(text(seen)).toContain('[saw 1 image(s)]');

    const blind = await createCustomAgent(platform, key, {
      name: 'Blind',
      description: 'Text only',
      system_prompt: 'Answer.',
      model: 'deepseek-chat',
    });
    const switched = await stream(newSession(), {
      message: 'Describe this image',
      image_data: `data:image/png;base64,${png}`,
      preferred_agents: [blind],
    });
    expect(switched[0]).toMatchObject({ agent_id: blind, model: 'gpt-4o' });
    expect(text(switched)).toContain('[saw 1 image(s)]');
  });

  it('lets the agent save a memory with its importance through the save_memory tool', async () => {
    const content = `The user prefers metric units ${randomUUID()}`;
    const events = await stream(newSession(), {
      message: `Remember this ${call('save_memory', { content, importance: 0.8 })}`,
      preferred_agents: [opsAgent],
    });
    expect(events.find((event) => event.tool === 'save_memory' && event.status === 'done')).toMatchObject({ ok: true });
    const listed = await json(await platform.agents('/memory/list', { key }));
    const saved = (listed.memories ?? listed.data ?? listed).find((memory: Json) => memory.content === content);
    expect(saved).toMatchObject({ importance: 0.8 });
  });

  it('sends a user without the Google login to /auth/google when a workspace agent is chosen, starting nothing', async () => {
    const sessionId = newSession();
    const response = await platform.agents(`/chat/stream/${sessionId}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Check my inbox', preferred_agents: ['mail'] }),
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/auth/google');
    expect(((await response.json()) as Json).error.message).toContain('Google');
    expect((await platform.agents(`/history/${sessionId}`, { key })).status).toBe(404);
  });

  it('answers 302 to /auth/google when routing among several agents picks a workspace agent the user cannot use', async () => {
    // Routed inside the turn (its first step): the turn ends failed at that step, and the answer is still the 302.
    const sessionId = newSession();
    const response = await platform.agents(`/chat/stream/${sessionId}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Check my gmail inbox for new email', preferred_agents: ['coder', 'mail'] }),
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/auth/google');
    expect(((await response.json()) as Json).error.message).toContain('Google');
  });

  it('needs a login', async () => {
    const response = await platform.agents(`/chat/stream/${newSession()}`, {
      method: 'POST',
      body: JSON.stringify({ message: 'hi' }),
    });
    expect(response.status).toBe(401);
  });

  it('serves the external API with X-API-Key and a named agent', async () => {
    const response = await platform.agents('/api/v1/chat', {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: JSON.stringify({ message: 'Hello there', session_id: newSession(), agent_id: 'writer' }),
    });
    expect(response.status).toBe(200);
    const reader = new StreamReader(response);
    const events = (await reader.rest()).map((event) => event.data);
    expect(events[0]).toMatchObject({ type: 'routed', agent_id: 'writer', method: 'named', confidence: 1 });
    expect(events.at(-1)).toBe('[DONE]');
  });
});

describe('agent loops', () => {
  it('continues three times and stops at [[DONE]], continuing as new on the way', async () => {
    const reader = await open(`/chat/loop/${newSession()}`, {
      message: 'Draft the report step by step [[iterations 3]]',
      agent_id: 'writer',
    });
    const events = (await reader.rest()).map((event) => event.data).filter((data): data is Json => data !== '[DONE]');
    expectDocumented(events);
    const iterations = events.filter((event) => event.type === 'iteration');
    expect(iterations.map((event) => [event.iteration, event.marker, event.stop])).toEqual([
      [1, 'continue', undefined],
      [2, 'continue', undefined],
      [3, 'done', 'done'],
    ]);
    const text = events
      .filter((event) => event.type === 'token')
      .map((event) => event.text)
      .join('');
    expect(text.match(/\[\[CONTINUE\]\]/g)).toHaveLength(2);
    expect(text).toContain('[[DONE]]');
    expect(events.at(-1)!.type).toBe('cost');
    // Ids increase: the stream can be re-attached from any of them.
    const ids = reader.events.filter((event) => event.id !== undefined).map((event) => Number(event.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('stops at its iteration limit, at its credit budget, and when cancelled', async () => {
    const limited = await open(`/chat/loop/${newSession()}`, {
      message: 'Keep going [[iterations forever]]',
      agent_id: 'writer',
      max_iterations: 2,
    });
    expect(await limited.until('iteration')).toMatchObject({ iteration: 1, marker: 'continue' });
    const last = await limited.until('iteration');
    expect(last).toMatchObject({ iteration: 2, stop: 'max_iterations' });

    const budgeted = await open(`/chat/loop/${newSession()}`, {
      message: 'Keep going [[iterations forever]]',
      agent_id: 'writer',
      budget_credits: 1,
    });
    expect(await budgeted.until('iteration')).toMatchObject({ iteration: 1, stop: 'budget' });

    const response = await platform.agents(`/chat/loop/${newSession()}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Keep going [[iterations forever]]', agent_id: 'writer' }),
    });
    const turnId = response.headers.get('x-turn-id')!;
    const cancelled = new StreamReader(response);
    await cancelled.until('iteration');
    const other = await platform.agents(`/chat/turns/${turnId}/cancel`, { method: 'POST', key: otherKey });
    expect(other.status).toBe(404);
    const cancel = await platform.agents(`/chat/turns/${turnId}/cancel`, { method: 'POST', key });
    expect(cancel.status).toBe(202);
    let stop: Json | '[DONE]';
    do {
      stop = await cancelled.until('iteration');
    } while (stop !== '[DONE]' && !stop.stop);
    expect(stop).toMatchObject({ stop: 'cancelled' });
  });

  const mailMessage = (to: string) =>
    `Send the summary ${call('send_email', { to, subject: 'Summary', body: 'All done.' })} [[iterations 2]]`;

  it('pauses for approval, sends once approved, and records who decided', async () => {
    const to = `approved-${randomUUID()}@example.com`;
    const reader = await open(`/chat/loop/${newSession()}`, { message: mailMessage(to), agent_id: opsAgent });
    const required = (await reader.until('hitl_required')) as Json;
    expect(required).toMatchObject({ tool: 'send_email', arguments: { to, subject: 'Summary' } });
    expect(Date.parse(required.expires_at)).toBeGreaterThan(Date.now());
    expect(mailsTo(to)).toHaveLength(0);

    const foreign = await platform.agents(`/chat/approvals/${required.id}/approve`, { method: 'POST', key: otherKey });
    expect(foreign.status).toBe(404);
    const approved = await platform.agents(`/chat/approvals/${required.id}/approve`, { method: 'POST', key });
    expect(approved.status).toBe(200);
    const again = await platform.agents(`/chat/approvals/${required.id}/reject`, { method: 'POST', key });
    expect([404, 409]).toContain(again.status);

    expect(await reader.until('hitl_resolved')).toMatchObject({ approved: true, by: expect.stringMatching(/^user:/) });
    const done = (await reader.until('tool')) as Json;
    expect(done).toMatchObject({ tool: 'send_email', status: 'calling' });
    expect(await reader.until('tool')).toMatchObject({ tool: 'send_email', status: 'done', ok: true });
    await reader.rest();
    expect(mailsTo(to)).toHaveLength(1);
  });

  it('does not send when the approval is rejected, and the loop goes on', async () => {
    const to = `rejected-${randomUUID()}@example.com`;
    const reader = await open(`/chat/loop/${newSession()}`, { message: mailMessage(to), agent_id: opsAgent });
    const required = (await reader.until('hitl_required')) as Json;
    const rejected = await platform.agents(`/chat/approvals/${required.id}/reject`, {
      method: 'POST',
      key,
      body: JSON.stringify({ reason: 'not now' }),
    });
    expect(rejected.status).toBe(200);
    expect(await reader.until('hitl_resolved')).toMatchObject({ approved: false, reason: 'not now' });
    const result = (await reader.until('tool')) as Json;
    expect(result).toMatchObject({ tool: 'send_email', status: 'calling' });
    expect(await reader.until('tool')).toMatchObject({ status: 'done', ok: false });
    const events = (await reader.rest()).map((event) => event.data).filter((data): data is Json => data !== '[DONE]');
    expect(events.filter((event) => event.type === 'iteration').at(-1)).toMatchObject({ stop: 'done' });
    expect(mailsTo(to)).toHaveLength(0);
  });

  it('rejects an approval nobody answers before its deadline', async () => {
    const to = `expired-${randomUUID()}@example.com`;
    const reader = await open(`/chat/loop/${newSession()}`, { message: mailMessage(to), agent_id: opsAgent });
    const required = (await reader.until('hitl_required')) as Json;
    expect(await reader.until('hitl_resolved')).toMatchObject({ id: required.id, approved: false, by: 'timeout' });
    await reader.rest();
    const late = await platform.agents(`/chat/approvals/${required.id}/approve`, { method: 'POST', key });
    expect([404, 409]).toContain(late.status);
    expect(mailsTo(to)).toHaveLength(0);
  });

  it('re-attaches to a loop from Last-Event-ID', async () => {
    const response = await platform.agents(`/chat/loop/${newSession()}`, {
      method: 'POST',
      key,
      body: JSON.stringify({ message: 'Two steps [[iterations 2]]', agent_id: 'writer' }),
    });
    const turnId = response.headers.get('x-turn-id')!;
    const first = new StreamReader(response);
    await first.until('iteration');
    const lastId = first.events.at(-1)!.id!;
    await first.cancel();
    const again = await platform.agents(`/chat/turns/${turnId}/stream`, {
      key,
      headers: { 'last-event-id': lastId },
    });
    expect(again.status).toBe(200);
    const rest = (await new StreamReader(again).rest()).map((event) => event.data);
    expect(rest.filter((data) => data !== '[DONE]' && data.type === 'iteration')).toEqual([
      expect.objectContaining({ iteration: 2, stop: 'done' }),
    ]);
    expect(rest.at(-1)).toBe('[DONE]');
    const foreign = await platform.agents(`/chat/turns/${turnId}/stream`, { key: otherKey });
    expect(foreign.status).toBe(404);
  });
});
