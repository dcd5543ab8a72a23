/**
 * Sharing and export of a conversation through HTTP (agent service): a real agent turn with a tool call, shared by a
 * public link whose whole body is checked (the conversation's words and tool names only: no tool arguments or
 * results, no other session, no memory, no e-mail address), served with noindex and a strict CSP, a snapshot of the
 * conversation when shared, revoked and expired links 404; Markdown and JSON exports that round-trip the
 * conversation with its tool calls and costs; another user's session 404 on share, revoke and export.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { callDirective as call } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let alice: { key: string; user_id: string };
let bob: { key: string; user_id: string };
let session: string;

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const codeBlock = '```js\nconsole.log("kept <as> code");\n```';
const firstMessage = [
  'Please work out the total for carol@example.org <script>alert(1)</script>.',
  codeBlock,
  call('calculator', { expression: '1200 + 345' }),
].join('\n');
const privateWords = 'the private words of another session';
const memory = 'Alice keeps her spare key under the blue flowerpot';

async function turn(sessionId: string, message: string, key = alice.key) {
  const response = await platform.agents(`/chat/stream/${encodeURIComponent(sessionId)}`, {
    method: 'POST',
    key,
    body: JSON.stringify({ message, preferred_agents: ['general'] }),
  });
  expect(response.status).toBe(200);
  const events = await readSse(response);
  expect(events.at(-1)?.data).toBe('[DONE]');
  return events.map((event) => event.data as Json);
}

beforeAll(async () => {
  platform = await startTestPlatform();
  alice = await platform.createKey();
  bob = await platform.createKey();
  session = `web:${randomUUID()}`;
  const events = await turn(session, firstMessage);
  expect(events.find((event) => event.type === 'tool' && event.status === 'done')).toMatchObject({
    tool: 'calculator',
    ok: true,
  });
  await turn(`web:${randomUUID()}`, privateWords);
  const saved = await platform.agents('/memory/add', {
    method: 'POST',
    key: alice.key,
    body: JSON.stringify({ content: memory, importance: 0.9 }),
  });
  expect(saved.status).toBe(201);
});

afterAll(async () => {
  await platform?.close();
});

async function exportJson(sessionId = session, key = alice.key) {
  const response = await platform.agents(`/export/${encodeURIComponent(sessionId)}?format=json`, { key });
  return { response, body: response.status === 200 ? ((await response.json()) as Json) : null };
}

async function share(body: Json = {}, sessionId = session, key = alice.key) {
  const response = await platform.agents(`/share/${encodeURIComponent(sessionId)}`, {
    method: 'POST',
    key,
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const openLink = (token: string, accept = 'application/json') =>
  fetch(`${platform.agentsUrl}/s/${token}`, { headers: { accept } });

describe('GET /export/{session_id}', () => {
  it('gives every message, tool call and cost as JSON, round-tripping the conversation', async () => {
    const { response, body } = await exportJson();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="conversation-web-${session.slice(4)}.json"`,
    );
    const exported = body!;
    expect(exported).toMatchObject({ format: 'tessera.conversation.v1', session_id: session, channels: ['web'] });
    // The history endpoint's view of the same session: the export holds each of its messages, in order.
    const history = (await (
      await platform.agents(`/history/${encodeURIComponent(session)}`, { key: alice.key })
    ).json()) as Json;
    expect(
      exported.messages.map((message: Json) => ({
        role: message.role,
        content: message.content,
        channel: message.channel,
        created_at: message.created_at,
        ...(message.agent_id ? { agent_id: message.agent_id } : {}),
        ...(message.tool_name ? { tool_name: message.tool_name } : {}),
        cursor: `${message.turn}.${message.seq}`,
      })),
    ).toEqual(history.messages);
    const [question, asked, answered, reply] = exported.messages;
    expect(question).toMatchObject({ role: 'user', content: firstMessage });
    expect(asked).toMatchObject({
      role: 'assistant',
      agent_id: 'general',
      tool_calls: [
        { id: expect.any(String), name: 'calculator', arguments: JSON.stringify({ expression: '1200 + 345' }) },
      ],
    });
    expect(answered).toMatchObject({ role: 'tool', tool_name: 'calculator', tool_call_id: asked.tool_calls[0].id });
    expect(answered.content).toContain('1545');
    expect(reply).toMatchObject({ role: 'assistant', agent_id: 'general' });
    // Costs: each turn's, adding up to the session's usage as GET /usage gives it.
    const usage = (await (
      await platform.agents(`/usage/${encodeURIComponent(session)}`, { key: alice.key })
    ).json()) as Json;
    expect(exported.turns).toEqual([
      expect.objectContaining({ turn: 1, status: 'done', agent_id: 'general', credits: usage.credits }),
    ]);
    expect(exported.turns[0].cost_usd).toBeCloseTo(usage.cost_usd, 8);
    expect(exported.usage).toEqual({
      turns: usage.turns,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      credits: usage.credits,
      cost_usd: usage.cost_usd,
    });
    expect(usage.credits).toBeGreaterThan(0);
  });

  it('gives readable Markdown: roles, times, tool calls summarised, code blocks kept', async () => {
    const exported = (await exportJson()).body!;
    const response = await platform.agents(`/export/${encodeURIComponent(session)}`, { key: alice.key });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="conversation-web-${session.slice(4)}.md"`,
    );
    const markdown = await response.text();
    expect(markdown.startsWith(`# ${exported.title}\n`)).toBe(true);
    expect(markdown).toContain(`\n${codeBlock}\n`);
    const [, asked, answered] = exported.messages;
    expect(markdown).toContain(
      `> **Tool call** \`calculator\` \`${asked.tool_calls[0].arguments}\` → \`${answered.content.replace(/\s+/g, ' ').trim()}\``,
    );
    // Read back: each heading's role, time and text are the conversation's user and assistant messages, in order.
    const sections = markdown.split(/^### /m).slice(1);
    const readBack = sections.map((section) => {
      const [heading, ...rest] = section.split('\n');
      const match = /^(User|Assistant)(?: \((.+)\))? · (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC$/.exec(heading!)!;
      const text = rest
        .join('\n')
        .split('\n')
        .filter((line) => !line.startsWith('> **Tool call**'))
        .join('\n')
        .trim();
      return { role: match[1]!.toLowerCase(), agent: match[2], time: match[3], text };
    });
    expect(readBack).toEqual(
      exported.messages
        .filter((message: Json) => message.role !== 'tool')
        .map((message: Json) => ({
          role: message.role,
          agent: message.agent_id,
          time: message.created_at.slice(0, 19).replace('T', ' '),
          text: (message.content ?? '').trim(),
        })),
    );
  });

  it('refuses a bad format and answers 404 for another user’s session or none', async () => {
    const bad = await platform.agents(`/export/${encodeURIComponent(session)}?format=pdf`, { key: alice.key });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error).toMatchObject({ type: 'invalid_request', param: 'format' });
    const foreign = await exportJson(session, bob.key);
    expect(foreign.response.status).toBe(404);
    expect(((await foreign.response.json()) as Json).error).toMatchObject({ type: 'not_found' });
    expect((await exportJson('web:nothing-here')).response.status).toBe(404);
    expect((await platform.agents(`/export/${encodeURIComponent(session)}`)).status).toBe(401);
  });
});

describe('share links', () => {
  it('shows the conversation’s words and tool names only, as JSON and as a strict noindex page', async () => {
    const exported = (await exportJson()).body!;
    const created = await share();
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      share_id: expect.stringMatching(/^shr_/),
      session_id: session,
      url: `${platform.agentsUrl}/s/${created.body.token}`,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      message_count: 4,
      created_at: expect.any(String),
      expires_at: null,
    });
    const response = await openLink(created.body.token);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-robots-tag')).toContain('noindex');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const [question, , , reply] = exported.messages;
    // The whole body: nothing beyond these fields and values.
    expect(await response.json()).toEqual({
      // Titled like the session list: the first user message (its address masked), cut to 80 characters.
      title: question.content.replace('carol@example.org', '[e-mail address hidden]').replace(/\s+/g, ' ').slice(0, 80),
      shared_at: created.body.created_at,
      expires_at: null,
      messages: [
        {
          role: 'user',
          content: question.content.replace('carol@example.org', '[e-mail address hidden]'),
          created_at: question.created_at,
        },
        {
          role: 'assistant',
          content: null,
          created_at: exported.messages[1].created_at,
          agent_id: 'general',
          tools_used: ['calculator'],
        },
        { role: 'assistant', content: reply.content, created_at: reply.created_at, agent_id: 'general' },
      ].map((message) =>
        message.content === null
          ? message
          : { ...message, content: message.content.replaceAll('carol@example.org', '[e-mail address hidden]') },
      ),
    });

    const page = await openLink(created.body.token, 'text/html');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toMatch(
      /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'$/,
    );
    const html = await page.text();
    expect(html).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('Used calculator');
    // Nothing else anywhere (the simulated model quotes the tool's result in its own answer, which is shown as said):
    // no tool message, no call's arguments field, no other session, memory, account or address.
    for (const body of [JSON.stringify(await (await openLink(created.body.token)).json()), html]) {
      for (const secret of ['carol@example.org', privateWords, memory, alice.user_id, '"tool"', 'tool_call']) {
        expect(body).not.toContain(secret);
      }
    }
  });

  it('shows the conversation as it was when shared', async () => {
    const created = await share();
    await turn(session, 'A later question that the link must not show');
    const shown = (await (await openLink(created.body.token)).json()) as Json;
    expect(shown.messages).toHaveLength(3);
    expect(JSON.stringify(shown)).not.toContain('A later question');
    const fresh = await share();
    expect(fresh.body.message_count).toBe(6);
    expect(((await (await openLink(fresh.body.token)).json()) as Json).messages).toHaveLength(5);
  });

  it('stops working when revoked: 404 like a token never issued', async () => {
    const first = await share();
    const second = await share();
    expect((await openLink(first.body.token)).status).toBe(200);
    const revoked = await platform.agents(`/share/${encodeURIComponent(session)}`, {
      method: 'DELETE',
      key: alice.key,
    });
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as Json).session_id).toBe(session);
    for (const token of [first.body.token, second.body.token, 'A'.repeat(43), 'short']) {
      const response = await openLink(token);
      expect(response.status).toBe(404);
      expect(((await response.json()) as Json).error.type).toBe('not_found');
    }
  });

  it('expires by itself', async () => {
    const created = await share({ expires_in_seconds: 3 });
    expect(Date.parse(created.body.expires_at) - Date.parse(created.body.created_at)).toBeGreaterThanOrEqual(2900);
    const shown = await openLink(created.body.token);
    // A busy machine may take the link's whole life to get here; either way it never outlives it.
    if (Date.now() < Date.parse(created.body.expires_at)) expect([200, 404]).toContain(shown.status);
    await waitFor('the link to expire', async () => (await openLink(created.body.token)).status === 404);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(created.body.expires_at) - 1000);
  });

  it('refuses bad input and another user’s session (404), changing nothing', async () => {
    const bad = await share({ expires_in_seconds: 0 });
    expect(bad).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request', param: 'expires_in_seconds' } },
    });
    const unknown = await share({ lifetime: 5 });
    expect(unknown.status).toBe(400);
    const foreign = await share({}, session, bob.key);
    expect(foreign).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
    const foreignRevoke = await platform.agents(`/share/${encodeURIComponent(session)}`, {
      method: 'DELETE',
      key: bob.key,
    });
    expect(foreignRevoke.status).toBe(404);
    const link = await share();
    expect((await openLink(link.body.token)).status).toBe(200);
    expect((await platform.agents(`/share/${encodeURIComponent(session)}`, { method: 'POST' })).status).toBe(401);
  });
});
