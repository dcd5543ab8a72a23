/**
 * Agents on the agent service (spec 4.2, 4.11): the built-in catalogue, custom agents (create, list, edit, fork,
 * model, delete), PATCH forking a built-in agent, plan-gated models, other users' agents refused as absent, bad
 * bodies changing nothing, and `GET /api/v1/agents` with `X-API-Key`. Real HTTP, real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const builtInIds = [
  'general',
  'researcher',
  'coder',
  'writer',
  'analyst',
  'translator',
  'planner',
  'mail',
  'calendar',
  'drive',
  'sheets',
  'docs',
  'contacts',
  'tasks',
];

async function call(
  path: string,
  init: { key?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await platform.agents(path, {
    key: init.key,
    method: init.method ?? 'GET',
    headers: init.headers,
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json, headers: response.headers };
}

async function customRows(userId: string) {
  const result = await database.query('select * from custom_agents where user_id = $1 order by created_at', [userId]);
  return result.rows;
}

const newAgent = {
  name: 'Haiku poet',
  description: 'Answers everything as a haiku.',
  system_prompt: 'You answer every message with a single haiku.',
  model: 'gpt-4o-mini',
  tools: ['web_search', 'save_memory'],
  routing: { keywords: ['Haiku', 'poem'] },
  temperature: 0.9,
};

describe('the built-in catalogue', () => {
  it('lists at least the fourteen built-in agents with their models, to anyone', async () => {
    const { status, body } = await call('/agents');
    expect(status).toBe(200);
    const ids = body.agents.map((agent: Json) => agent.id);
    expect(ids).toEqual(expect.arrayContaining(builtInIds));
    for (const agent of body.agents) {
      expect(agent).toMatchObject({ builtin: true, forked_from: null });
      expect(typeof agent.model).toBe('string');
      expect(agent.description.length).toBeGreaterThan(20);
      expect(Array.isArray(agent.tools)).toBe(true);
    }
    const byId = new Map(body.agents.map((agent: Json) => [agent.id, agent]));
    expect(byId.get('mail')).toMatchObject({ workspace: 'mail', tools: expect.arrayContaining(['gmail_send']) });
    expect(byId.get('calendar')).toMatchObject({ workspace: 'calendar' });
    expect(byId.get('general')).toMatchObject({ workspace: null });
    for (const id of ['researcher', 'analyst', 'coder', 'planner']) {
      expect((byId.get(id) as Json).tools).toContain('update_plan');
    }
    // Anonymous callers see the catalogue's own mapping.
    expect(byId.get('coder')).toMatchObject({ model: 'claude-sonnet-4-6', configured_model: 'claude-sonnet-4-6' });
  });

  it('shows one agent with its prompt; a free-plan caller gets a model the plan allows', async () => {
    const anonymous = await call('/agents/coder');
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.system_prompt).toContain('software engineer');
    expect(anonymous.body.routing.keywords).toContain('code');

    const { key } = await platform.createKey(undefined, 'free');
    const free = await call('/agents/coder', { key });
    expect(free.body).toMatchObject({ model: 'gpt-4o-mini', configured_model: 'claude-sonnet-4-6' });
    expect((await call('/agents/no-such-agent')).status).toBe(404);
  });

  it('answers GET /api/v1/agents for X-API-Key callers with the same list, and refuses it without a key', async () => {
    const { key } = await platform.createKey();
    await call('/agents/custom', { key, method: 'POST', body: newAgent });
    const viaHeader = await call('/api/v1/agents', { headers: { 'x-api-key': key } });
    expect(viaHeader.status).toBe(200);
    const viaBearer = await call('/agents', { key });
    expect(viaHeader.body).toEqual(viaBearer.body);
    expect(viaHeader.body.agents.at(-1)).toMatchObject({ name: 'Haiku poet', builtin: false });
    expect((await call('/api/v1/agents')).status).toBe(401);
    expect((await call('/api/v1/agents', { headers: { 'x-api-key': 'te_nope' } })).status).toBe(401);
  });
});

describe('custom agents', () => {
  it('are created, listed, edited, re-modelled and deleted by their owner', async () => {
    const { key, user_id } = await platform.createKey();
    const created = await call('/agents/custom', { key, method: 'POST', body: newAgent });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^agt_/),
      name: 'Haiku poet',
      model: 'gpt-4o-mini',
      tools: ['web_search', 'save_memory'],
      routing: { keywords: ['haiku', 'poem'], examples: [] },
      temperature: 0.9,
      builtin: false,
      forked_from: null,
      workspace: null,
    });
    expect(created.headers.get('location')).toBe(`/agents/${created.body.id}`);
    const id = created.body.id;

    const custom = await call('/agents/custom', { key });
    expect(custom.body.agents.map((agent: Json) => agent.id)).toEqual([id]);
    const all = await call('/agents', { key });
    expect(all.body.agents.slice(0, builtInIds.length).every((agent: Json) => agent.builtin)).toBe(true);
    expect(all.body.agents.at(-1).id).toBe(id);

    const patched = await call(`/agents/${id}`, {
      key,
      method: 'PATCH',
      body: { system_prompt: 'Answer in limericks.', temperature: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id,
      system_prompt: 'Answer in limericks.',
      temperature: null,
      name: 'Haiku poet',
    });

    const remodelled = await call(`/agents/${id}/model`, { key, method: 'POST', body: { model: 'claude-opus-4-5' } });
    expect(remodelled.status).toBe(200);
    expect(remodelled.body.model).toBe('claude-opus-4-5');
    expect((await customRows(user_id))[0].model).toBe('claude-opus-4-5');

    const deleted = await call(`/agents/custom/${id}`, { key, method: 'DELETE' });
    expect(deleted).toMatchObject({ status: 200, body: { id, deleted: true } });
    expect(await customRows(user_id)).toEqual([]);
    expect((await call(`/agents/${id}`, { key })).status).toBe(404);
    expect((await call(`/agents/custom/${id}`, { key, method: 'DELETE' })).status).toBe(404);
    expect((await call('/agents/custom/general', { key, method: 'DELETE' })).status).toBe(400);
  });

  it('PATCH on a built-in agent forks it; the built-in stays as it was', async () => {
    const { key, user_id } = await platform.createKey();
    const before = await call('/agents/writer', { key });
    const forked = await call('/agents/writer', {
      key,
      method: 'PATCH',
      body: { system_prompt: 'Write like Hemingway.' },
    });
    expect(forked.status).toBe(201);
    expect(forked.body).toMatchObject({
      id: expect.stringMatching(/^agt_/),
      forked_from: 'writer',
      builtin: false,
      name: 'Writer (custom)',
      system_prompt: 'Write like Hemingway.',
      tools: before.body.tools,
      description: before.body.description,
    });
    expect(await call('/agents/writer', { key })).toMatchObject({ body: before.body });
    expect((await customRows(user_id)).map((row) => row.forked_from)).toEqual(['writer']);
  });

  it('forks a built-in agent, keeping its workspace; the fork can be changed on the way', async () => {
    const { key } = await platform.createKey();
    const fork = await call('/agents/mail/fork', { key, method: 'POST' });
    expect(fork.status).toBe(201);
    expect(fork.body).toMatchObject({ forked_from: 'mail', workspace: 'mail', name: 'Mail (custom)', builtin: false });
    const named = await call('/agents/mail/fork', { key, method: 'POST', body: { name: 'Work mail' } });
    expect(named.body.name).toBe('Work mail');
    // Forking one's own custom agent copies it, still descending from the built-in.
    const copy = await call(`/agents/${named.body.id}/fork`, { key, method: 'POST' });
    expect(copy.body).toMatchObject({ name: 'Work mail (copy)', forked_from: 'mail' });
    expect((await call('/agents/custom', { key })).body.agents).toHaveLength(3);
  });

  it('records a model choice for a built-in agent without forking it', async () => {
    const { key, user_id } = await platform.createKey();
    const chosen = await call('/agents/translator/model', { key, method: 'POST', body: { model: 'gpt-4o' } });
    expect(chosen.status).toBe(200);
    expect(chosen.body).toMatchObject({ id: 'translator', builtin: true, model: 'gpt-4o' });
    expect(await customRows(user_id)).toEqual([]);
    const listed = (await call('/agents', { key })).body.agents.find((agent: Json) => agent.id === 'translator');
    expect(listed.model).toBe('gpt-4o');
    // Only for this user.
    const other = await platform.createKey();
    expect((await call('/agents/translator', { key: other.key })).body.model).toBe('gemini-2.5-flash');
  });

  it('refuses a model outside the caller’s plan (403 with the plan that unlocks it) and an unknown model (404)', async () => {
    const { key, user_id } = await platform.createKey(undefined, 'free');
    const above = await call('/agents/custom', {
      key,
      method: 'POST',
      body: { ...newAgent, model: 'claude-opus-4-5' },
    });
    expect(above.status).toBe(403);
    expect(above.body.error).toMatchObject({ type: 'permission_denied', required_plan: 'pro', param: 'model' });
    const viaModel = await call('/agents/general/model', { key, method: 'POST', body: { model: 'gpt-4o' } });
    expect(viaModel.status).toBe(403);
    expect(viaModel.body.error).toMatchObject({ type: 'permission_denied', required_plan: 'starter' });
    const unknown = await call('/agents/general/model', { key, method: 'POST', body: { model: 'gpt-99' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.type).toBe('model_not_found');
    const forkAbove = await call('/agents/coder', { key, method: 'PATCH', body: { model: 'claude-sonnet-4-6' } });
    expect(forkAbove.status).toBe(403);
    expect(await customRows(user_id)).toEqual([]);
    // Without a model, a free user's custom agent gets the default model; a fork of a built-in on a model above
    // the plan gets the one the plan allows.
    const plain = await call('/agents/custom', { key, method: 'POST', body: { ...newAgent, model: undefined } });
    expect(plain.body.model).toBe('gpt-4o-mini');
    const fork = await call('/agents/coder/fork', { key, method: 'POST' });
    expect(fork.body).toMatchObject({ model: 'gpt-4o-mini', configured_model: 'gpt-4o-mini' });
  });

  it('refuses bad bodies with 400 and changes nothing', async () => {
    const { key, user_id } = await platform.createKey();
    const { body: agent } = await call('/agents/custom', { key, method: 'POST', body: newAgent });
    const bad: Array<[string, string, unknown]> = [
      ['POST', '/agents/custom', { ...newAgent, name: 'x'.repeat(81) }],
      ['POST', '/agents/custom', { ...newAgent, description: 'x'.repeat(1001) }],
      ['POST', '/agents/custom', { ...newAgent, system_prompt: 'x'.repeat(20_001) }],
      ['POST', '/agents/custom', { ...newAgent, tools: ['rm_rf'] }],
      ['POST', '/agents/custom', { ...newAgent, owner: 'someone' }],
      ['POST', '/agents/custom', { name: 'No prompt', description: 'd' }],
      ['POST', '/agents/custom', { ...newAgent, temperature: 3 }],
      ['POST', '/agents/custom', '{not json'],
      ['PATCH', `/agents/${agent.id}`, { tools: ['nope'] }],
      ['PATCH', `/agents/${agent.id}`, { name: '' }],
      ['PATCH', `/agents/${agent.id}`, {}],
      ['PATCH', `/agents/${agent.id}`, { user_id: 'usr_other' }],
      ['PATCH', '/agents/general', { system_prompt: 'x'.repeat(20_001) }],
      ['POST', `/agents/${agent.id}/model`, {}],
      ['POST', `/agents/${agent.id}/model`, { model: 42 }],
      ['POST', '/agents/general/fork', { tools: ['nope'] }],
    ];
    for (const [method, path, body] of bad) {
      const response = await call(path, { key, method, body });
      expect([method, path, response.status, response.body.error.type]).toEqual([method, path, 400, 'invalid_request']);
    }
    const rows = await customRows(user_id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: newAgent.name, system_prompt: newAgent.system_prompt, model: 'gpt-4o-mini' });
    const choices = await database.query('select * from agent_model_choices where user_id = $1', [user_id]);
    expect(choices.rows).toEqual([]);
  });

  it('needs a login to change anything', async () => {
    expect((await call('/agents/custom', { method: 'POST', body: newAgent })).status).toBe(401);
    expect((await call('/agents/custom')).status).toBe(401);
    expect((await call('/agents/general', { method: 'PATCH', body: { name: 'Mine' } })).status).toBe(401);
    expect((await call('/agents/general/fork', { method: 'POST' })).status).toBe(401);
    expect((await call('/agents/general/model', { method: 'POST', body: { model: 'gpt-4o' } })).status).toBe(401);
  });
});

describe('another user’s agent', () => {
  it('does not exist for the caller: 404 on get, patch, fork, model and delete, absent from listings', async () => {
    const owner = await platform.createKey();
    const stranger = await platform.createKey();
    const { body: agent } = await call('/agents/custom', { key: owner.key, method: 'POST', body: newAgent });
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/agents/${agent.id}`],
      ['PATCH', `/agents/${agent.id}`, { system_prompt: 'Mine now.' }],
      ['POST', `/agents/${agent.id}/fork`],
      ['POST', `/agents/${agent.id}/model`, { model: 'gpt-4o' }],
      ['DELETE', `/agents/custom/${agent.id}`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await call(path, { key: stranger.key, method, body });
      expect([method, path, response.status, response.body.error.type]).toEqual([method, path, 404, 'not_found']);
    }
    expect((await call(`/agents/${agent.id}`)).status).toBe(404);
    const listed = await call('/agents', { key: stranger.key });
    expect(listed.body.agents.map((entry: Json) => entry.id)).not.toContain(agent.id);
    expect((await call('/agents/custom', { key: stranger.key })).body.agents).toEqual([]);
    expect(await customRows(stranger.user_id)).toEqual([]);
    const [row] = await customRows(owner.user_id);
    expect(row).toMatchObject({ id: agent.id, system_prompt: newAgent.system_prompt, model: 'gpt-4o-mini' });
  });
});
