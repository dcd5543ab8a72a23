/**
 * `POST /webhook/github` through HTTP (docs/webhooks.md, GitHub): a repository connected by its owner with a
 * token, deliveries signed by the test with GitHub's own `@octokit/webhooks-methods` (and once by the simulator, as
 * `npm start` is tried): `ping` is answered; an issue wakes the agent, which comments back through GitHub's REST API
 * (the simulator's) only once the owner approves the call, seen waiting in `GET /webhook/runs/{id}` and decided with
 * `POST /chat/approvals/{id}/approve`; a rejected call posts nothing; a repository that allows comments without
 * approval gets them at once; the agent's own comment coming back wakes nothing; a repeated `X-GitHub-Delivery` is
 * the first run; forged, unsigned, oversize and malformed deliveries store nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sign } from '@octokit/webhooks-methods';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Client;
let owner: { key: string; user_id: string };

beforeAll(async () => {
  platform = await startTestPlatform({ TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('hex') });
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  owner = await platform.createKey();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const json = async (response: Response): Promise<Json> => (await response.json()) as Json;

async function connect(body: Json): Promise<Json> {
  const response = await platform.agents('/webhooks', {
    method: 'POST',
    key: owner.key,
    body: JSON.stringify({ source: 'github', agent_id: 'general', github_token: 'github_pat_test', ...body }),
  });
  expect(response.status).toBe(201);
  return json(response);
}

/** GitHub delivering `event` to the webhook's URL, signed by the test with GitHub's own library. */
async function deliver(
  webhook: Json,
  event: string,
  payload: Json | string,
  options: { delivery?: string; secret?: string; signature?: string | null } = {},
): Promise<{ response: Response; delivery: string }> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const delivery = options.delivery ?? randomUUID();
  const signature =
    options.signature === undefined
      ? await sign(options.secret ?? (webhook.secret as string), body)
      : options.signature;
  const response = await fetch(webhook.url as string, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/test',
      'x-github-event': event,
      'x-github-delivery': delivery,
      ...(signature === null ? {} : { 'x-hub-signature-256': signature }),
    },
    body,
  });
  return { response, delivery };
}

function issueOpened(repository: string, number: number, body: string, action = 'opened'): Json {
  const [ownerName] = repository.split('/');
  return {
    action,
    issue: {
      number,
      title: `Widget ${number} is broken`,
      body,
      html_url: `https://github.com/${repository}/issues/${number}`,
      user: { login: 'reporter' },
      state: 'open',
    },
    repository: { full_name: repository, name: repository.split('/')[1], owner: { login: ownerName } },
    sender: { login: 'reporter', type: 'User' },
  };
}

const callComment = (repository: string, number: number, text: string) =>
  `It fails on start. [[call github_comment ${JSON.stringify({ repository, issue_number: number, body: text })}]]`;

async function run(runId: string, until: (run: Json) => boolean, what: string): Promise<Json> {
  return waitFor(
    what,
    async () => {
      const view = await json(await platform.agents(`/webhook/runs/${encodeURIComponent(runId)}`, { key: owner.key }));
      return until(view) && view;
    },
    90_000,
  );
}

const comments = async (): Promise<Json[]> =>
  (await json(await fetch(`${platform.simulatorUrl}/github/_comments`))).comments as Json[];

const runCount = async () =>
  Number((await database.query<{ count: string }>('select count(*) from webhook_runs')).rows[0]!.count);

describe('a connected GitHub repository', () => {
  let webhook: Json;

  beforeAll(async () => {
    webhook = await connect({ repository: 'Acme/Widgets' });
  });

  it('is connected with its URL and a secret shown once; one webhook per repository', async () => {
    expect(webhook).toMatchObject({
      source: 'github',
      repository: 'acme/widgets',
      can_comment: true,
      comment_without_approval: false,
      url: `${platform.agentsUrl}/webhook/github?hook=${webhook.id as string}`,
    });
    expect(webhook.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await json(await platform.agents('/webhooks', { key: owner.key })))).not.toContain(
      'github_pat_test',
    );
    const again = await platform.agents('/webhooks', {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ source: 'github', agent_id: 'general', repository: 'acme/widgets' }),
    });
    expect(again.status).toBe(409);
    expect((await json(again)).error).toMatchObject({ type: 'conflict', param: 'repository' });
  });

  it('answers ping', async () => {
    const { response } = await deliver(webhook, 'ping', { zen: 'Design for failure.', hook_id: 1 });
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({ ok: true, hook: webhook.id, zen: 'Design for failure.' });
  });

  it('wakes the agent on a new issue; its comment waits for the owner’s approval, then is posted once', async () => {
    const before = (await comments()).length;
    const { response, delivery } = await deliver(
      webhook,
      'issues',
      issueOpened('acme/widgets', 7, callComment('acme/widgets', 7, 'Thanks for the report, looking into it.')),
    );
    expect(response.status).toBe(202);
    const accepted = await json(response);
    expect(accepted.run_id).toBe(`webhook-general-${webhook.id as string}.${delivery}`);

    const waiting = await run(accepted.run_id as string, (view) => view.status === 'waiting_for_approval', 'approval');
    expect(waiting.pending_approval).toMatchObject({
      tool: 'github_comment',
      arguments: { repository: 'acme/widgets', issue_number: 7, body: 'Thanks for the report, looking into it.' },
      approve: expect.stringMatching(/^POST \/chat\/approvals\/.+\/approve$/),
    });
    expect((await comments()).length).toBe(before);

    // The same delivery again while it waits: the first run.
    const repeated = await deliver(webhook, 'issues', issueOpened('acme/widgets', 7, 'x'), { delivery });
    expect(repeated.response.status).toBe(202);
    expect(await json(repeated.response)).toMatchObject({ run_id: accepted.run_id, duplicate: true });

    const approvalId = waiting.pending_approval.approval_id as string;
    const approved = await platform.agents(`/chat/approvals/${encodeURIComponent(approvalId)}/approve`, {
      method: 'POST',
      key: owner.key,
      body: '{}',
    });
    expect(approved.status).toBe(200);
    const done = await run(accepted.run_id as string, (view) => view.status === 'done', 'the run');
    expect(done.answer).toEqual(expect.any(String));
    const posted = (await comments()).slice(before);
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({ repository: 'acme/widgets', issue_number: 7 });
    expect(posted[0]!.body).toMatch(/^Thanks for the report, looking into it\.\n\n<!-- tessera-call:.+ -->$/);

    // The agent's own comment coming back as an issue_comment event wakes nothing.
    const echo = await deliver(webhook, 'issue_comment', {
      ...issueOpened('acme/widgets', 7, 'It fails on start.'),
      action: 'created',
      comment: { body: posted[0]!.body, html_url: posted[0]!.html_url, user: { login: 'tessera-sim' } },
    });
    expect(echo.response.status).toBe(200);
    expect((await json(echo.response)).ignored).toContain('own');
  }, 180_000);

  it('posts nothing when the owner rejects the comment', async () => {
    const before = (await comments()).length;
    const { response } = await deliver(
      webhook,
      'issues',
      issueOpened('acme/widgets', 8, callComment('acme/widgets', 8, 'Closing as duplicate.')),
    );
    const runId = (await json(response)).run_id as string;
    const waiting = await run(runId, (view) => view.status === 'waiting_for_approval', 'approval');
    const rejected = await platform.agents(
      `/chat/approvals/${encodeURIComponent(waiting.pending_approval.approval_id as string)}/reject`,
      { method: 'POST', key: owner.key, body: JSON.stringify({ reason: 'not a duplicate' }) },
    );
    expect(rejected.status).toBe(200);
    const done = await run(runId, (view) => view.status === 'done', 'the run');
    expect(done.answer).toEqual(expect.any(String));
    expect((await comments()).length).toBe(before);
  }, 180_000);

  it('acknowledges events that do not wake the agent, and events of other repositories', async () => {
    const before = await runCount();
    const closed = await deliver(webhook, 'issues', issueOpened('acme/widgets', 9, 'done', 'closed'));
    expect(closed.response.status).toBe(200);
    expect((await json(closed.response)).ignored).toContain('closed');
    const star = await deliver(webhook, 'star', { action: 'created', repository: { full_name: 'acme/widgets' } });
    expect((await json(star.response)).ignored).toContain('star');
    const other = await deliver(webhook, 'issues', issueOpened('acme/other', 1, 'hello'));
    expect(other.response.status).toBe(200);
    expect((await json(other.response)).ignored).toContain('acme/other');
    expect(await runCount()).toBe(before);
  });

  it('refuses forged, unsigned, oversize and malformed deliveries, storing nothing', async () => {
    const before = await runCount();
    const payload = issueOpened('acme/widgets', 10, 'forged');
    const forged = await deliver(webhook, 'issues', payload, { secret: 'not-the-secret' });
    expect(forged.response.status).toBe(401);
    expect(await json(forged.response)).toEqual({
      error: { type: 'authentication_error', message: 'X-Hub-Signature-256 is missing or does not match the body' },
    });
    const unsigned = await deliver(webhook, 'issues', payload, { signature: null });
    expect(unsigned.response.status).toBe(401);
    const sha1 = await deliver(webhook, 'issues', payload, { signature: 'sha1=0123' });
    expect(sha1.response.status).toBe(401);
    const oversize = await deliver(webhook, 'issues', { ...payload, padding: 'x'.repeat(5 * 1024 * 1024) });
    expect(oversize.response.status).toBe(413);
    expect((await json(oversize.response)).error.type).toBe('payload_too_large');
    const malformed = await deliver(webhook, 'issues', '{"action": "opened", ');
    expect(malformed.response.status).toBe(400);
    expect((await json(malformed.response)).error).toEqual({
      type: 'invalid_request',
      message: 'The body is not JSON',
    });
    const badDelivery = await deliver(webhook, 'issues', payload, { delivery: 'not a guid!' });
    expect(badDelivery.response.status).toBe(400);
    expect((await json(badDelivery.response)).error.param).toBe('X-GitHub-Delivery');
    expect(await runCount()).toBe(before);
  }, 60_000);
});

describe('a repository whose owner allows comments without approval', () => {
  it('comments at once, delivered by the simulator as GitHub signs it', async () => {
    const webhook = await connect({ repository: 'acme/gadgets', comment_without_approval: true });
    const before = (await comments()).length;
    const payload = issueOpened('acme/gadgets', 3, callComment('acme/gadgets', 3, 'Reproduced on main.'));
    const delivered = await json(
      await fetch(`${platform.simulatorUrl}/github/_deliver`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_url: webhook.url, secret: webhook.secret, event: 'issues', payload }),
      }),
    );
    expect(delivered.status).toBe(202);
    const runId = JSON.parse(delivered.body as string).run_id as string;
    const done = await run(runId, (view) => view.status === 'done', 'the run');
    expect(done.pending_approval).toBeUndefined();
    const posted = (await comments()).slice(before);
    expect(posted.map((comment) => [comment.repository, comment.issue_number])).toEqual([['acme/gadgets', 3]]);
  }, 120_000);

  it('without a token, the agent is not offered the comment tool and answers in text', async () => {
    const webhook = await connect({ repository: 'acme/no-token', github_token: undefined });
    expect(webhook.can_comment).toBe(false);
    const before = (await comments()).length;
    const { response } = await deliver(
      webhook,
      'issues',
      issueOpened('acme/no-token', 1, callComment('acme/no-token', 1, 'hello')),
    );
    const done = await run((await json(response)).run_id as string, (view) => view.status === 'done', 'the run');
    expect(done.answer).toEqual(expect.any(String));
    expect((await comments()).length).toBe(before);
  }, 120_000);
});
