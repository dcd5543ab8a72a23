/**
 * Teams of the agent service through HTTP (docs/teams-and-a2a.md): creating and listing teams, an
 * invitation mailed through a real SMTP server (smtp-server on loopback) and accepted by its link (once), who may
 * see and invite, and a broadcast delivered by the `teamBroadcast` workflow to every member's `team:<id>` session
 * and to a member's Telegram chat, or LINE chat, linked by `/link CODE` (the simulator plays both), with its status
 * queryable.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Connection } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { newLineUser, newTelegramChat, simulatedMessengers } from '../helpers/messengers.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

// Response bodies are read loosely; each test states the shape it expects with expect().
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let smtp: TestSmtp;
let platform: TestPlatform;
let database: pg.Pool;
let temporal: Connection;

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({ SMTP_URL: smtp.url, MAIL_FROM: 'Tessera Test <teams@tessera.test>' });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  temporal = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
}, 300_000);

afterAll(async () => {
  await temporal?.close();
  await database?.end();
  await platform?.close();
  await smtp?.close();
});

const newEmail = (who: string) => `${who}-${randomBytes(4).toString('hex')}@example.com`;

/** A user with an API key (Bearer), made through the gateway's master key. */
async function keyUser(who: string) {
  const email = newEmail(who);
  const created = await platform.createKey(email);
  return { email, key: created.key, userId: created.user_id };
}

async function call(path: string, auth: { key?: string; cookie?: string }, method = 'GET', body?: unknown) {
  const response = await platform.agents(path, {
    method,
    ...auth,
    headers: { accept: 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Json, response };
}

/** Invites `email` as the owner and reads the link's token from the mail that arrived at the SMTP server. */
async function invite(teamId: string, owner: { key: string }, email: string, role?: string) {
  const sent = await call(`/teams/${teamId}/invite`, owner, 'POST', { email, ...(role ? { role } : {}) });
  expect(sent.status).toBe(201);
  const mail = await smtp.nextMail(email);
  const match = /http:\/\/127\.0\.0\.1:\d+\/teams\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(mail.text);
  expect(match).not.toBeNull();
  return { sent: sent.body, mail, token: match![1]! };
}

const accept = (token: string, auth: { key?: string; cookie?: string } = {}) =>
  call(`/teams/invitations/accept?token=${encodeURIComponent(token)}`, auth);

const { sentTo, link } = simulatedMessengers(() => platform);

/** What the platform sent to the Telegram chat, waiting until there are at least `count` messages. */
const telegramSent = (chat: string, count: number) => sentTo('telegram', chat, count);

describe('teams', () => {
  let owner: Awaited<ReturnType<typeof keyUser>>;
  let outsider: Awaited<ReturnType<typeof keyUser>>;
  let teamId: string;
  /** The invitee who had no account: logged in by the invitation link (a cookie). */
  const invitee = { email: newEmail('invitee'), cookie: '', userId: '' };
  /** A member who had an account already and accepts while logged in (a key). */
  let colleague: Awaited<ReturnType<typeof keyUser>>;

  beforeAll(async () => {
    owner = await keyUser('owner');
    outsider = await keyUser('outsider');
    colleague = await keyUser('colleague');
  });

  it('creates a team whose creator is its owner; a team is listed to its members only', async () => {
    const created = await call('/teams', owner, 'POST', { name: 'Pelican crew' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Pelican crew',
      role: 'owner',
      member_count: 1,
      created_by: owner.userId,
    });
    expect(created.body.id).toMatch(/^team_/);
    teamId = created.body.id as string;

    const listed = await call('/teams', owner);
    expect(listed.status).toBe(200);
    expect(listed.body.teams).toEqual([expect.objectContaining({ id: teamId, role: 'owner', member_count: 1 })]);
    expect((await call('/teams', outsider)).body.teams).toEqual([]);
    expect((await call(`/teams/${teamId}`, owner)).body.members).toEqual([
      expect.objectContaining({ user_id: owner.userId, email: owner.email, role: 'owner' }),
    ]);

    expect((await call('/teams', owner, 'POST', { name: '  ' })).status).toBe(400);
    expect((await call('/teams', {}, 'POST', { name: 'x' })).status).toBe(401);
    expect((await call('/teams', {})).status).toBe(401);
  });

  it('mails an invitation through SMTP; its link logs the invitee in and makes them a member, once', async () => {
    const { sent, mail, token } = await invite(teamId, owner, invitee.email);
    expect(sent).toMatchObject({ sent: true, invitation: { email: invitee.email, role: 'member', team_id: teamId } });
    expect(mail.raw).toMatch(/^Subject: You are invited to a team on Tessera: Pelican crew/m);
    expect(mail.text).toContain(owner.email);
    // Only the token's SHA-256 is stored.
    const stored = await database.query('select token_hash from team_invitations where email = $1', [invitee.email]);
    expect(stored.rows[0].token_hash).not.toContain(token);

    const accepted = await accept(token);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({
      accepted: true,
      team: { id: teamId, name: 'Pelican crew' },
      role: 'member',
      logged_in: true,
      user: { email: invitee.email },
    });
    const cookie = accepted.response.headers.getSetCookie().find((line) => line.startsWith('tessera_session='));
    expect(cookie).toBeDefined();
    invitee.cookie = cookie!.split(';')[0]!;
    invitee.userId = accepted.body.user.id as string;

    const listed = await call('/teams', { cookie: invitee.cookie });
    expect(listed.body.teams).toEqual([expect.objectContaining({ id: teamId, role: 'member', member_count: 2 })]);

    // The link works once: replayed, it is refused, and nothing changes.
    const replayed = await accept(token);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error.message).toMatch(/invalid, already used or expired/);
    expect(replayed.response.headers.getSetCookie()).toEqual([]);
    expect((await accept('forged-token')).status).toBe(400);
  });

  it('accepts for a logged-in account of the invited address, and refuses one logged in as someone else', async () => {
    const { token } = await invite(teamId, owner, colleague.email);
    // Someone else's login does not take the invitation (and leaves it usable).
    const foreign = await accept(token, outsider);
    expect(foreign.status).toBe(403);
    const accepted = await accept(token, colleague);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ role: 'member', logged_in: false, user: { id: colleague.userId } });
    expect(accepted.response.headers.getSetCookie()).toEqual([]);
    // Inviting a member again is a conflict.
    expect((await call(`/teams/${teamId}/invite`, owner, 'POST', { email: colleague.email })).status).toBe(409);
  });

  it('lets only owners invite (403 for a member), and shows an outsider no team at all (404)', async () => {
    const byMember = await call(`/teams/${teamId}/invite`, colleague, 'POST', { email: newEmail('x') });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.type).toBe('permission_denied');
    for (const [method, path, body] of [
      ['GET', `/teams/${teamId}`, undefined],
      ['POST', `/teams/${teamId}/invite`, { email: newEmail('y') }],
      ['POST', `/teams/${teamId}/broadcast`, { message: 'hi' }],
      ['GET', `/teams/${teamId}/broadcasts/bc_nothing`, undefined],
    ] as const) {
      const response = await call(path, outsider, method, body);
      expect(response.status).toBe(404);
      expect(response.body.error.type).toBe('not_found');
    }
    expect((await call(`/teams/${teamId}/invite`, owner, 'POST', { email: 'not-an-address' })).status).toBe(400);
    expect((await call(`/teams/${teamId}/invite`, owner, 'POST', { email: newEmail('z'), role: 'king' })).status).toBe(
      400,
    );
  });

  it('broadcasts to every member’s team session and to a linked Telegram chat, once each, with a queryable status', async () => {
    // The invitee links a Telegram chat to their account: a code from the agent service, `/link CODE` in Telegram.
    const chat = newTelegramChat();
    await link('telegram', chat, { cookie: invitee.cookie });
    expect((await call('/auth/me', { cookie: invitee.cookie })).body.linked_apps).toEqual(['telegram']);

    const started = await call(`/teams/${teamId}/broadcast`, colleague, 'POST', {
      message: 'Stand-up moves to 10:30.',
    });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({ id: expect.stringMatching(/^bc_/), status: 'running' });
    const broadcastId = started.body.id as string;
    expect(started.response.headers.get('location')).toBe(`/teams/${teamId}/broadcasts/${broadcastId}`);

    // Its status, until it has finished.
    let status: Json = {};
    const deadline = Date.now() + 30_000;
    for (;;) {
      const read = await call(`/teams/${teamId}/broadcasts/${broadcastId}`, owner);
      expect(read.status).toBe(200);
      status = read.body;
      if (status.status !== 'running' || Date.now() > deadline) break;
      expect(['workflow', 'table']).toContain(status.source);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toMatchObject({
      id: broadcastId,
      team_id: teamId,
      sender_id: colleague.userId,
      status: 'delivered',
    });
    expect(status.finished_at).not.toBeNull();
    const byUser = new Map((status.deliveries as Json[]).map((delivery) => [delivery.user_id, delivery]));
    expect([...byUser.keys()].sort()).toEqual([owner.userId, invitee.userId, colleague.userId].sort());
    for (const delivery of byUser.values())
      expect(delivery).toMatchObject({ status: 'delivered', session: 'delivered' });
    expect(byUser.get(invitee.userId)!.channels).toEqual([{ platform: 'telegram', status: 'delivered' }]);
    expect(byUser.get(owner.userId)!.channels).toEqual([]);

    // In each member's session `team:<team id>`, tagged with the channel `team`.
    const text = `[Pelican crew] ${colleague.email}: Stand-up moves to 10:30.`;
    for (const auth of [{ cookie: invitee.cookie }, { key: owner.key }, { key: colleague.key }]) {
      const history = await call(`/history/team:${teamId}`, auth);
      expect(history.status).toBe(200);
      expect(history.body.messages).toEqual([
        expect.objectContaining({ role: 'assistant', channel: 'team', content: text }),
      ]);
    }
    // And in the linked Telegram chat, once.
    const sent = await telegramSent(chat, 2);
    expect(sent.slice(1)).toEqual([text]);

    // In Temporal: `broadcast-<id>`, searchable by kind and user, with a summary.
    const client = new Client({ connection: temporal });
    const description = await client.workflow.getHandle(`broadcast-${broadcastId}`).describe();
    expect(description.type).toBe('teamBroadcast');
    expect(description.searchAttributes).toMatchObject({
      TesseraKind: ['team-broadcast'],
      TesseraUser: [colleague.userId],
    });
    expect(await description.staticSummary()).toContain('Pelican crew');
    const result = await client.workflow.getHandle(`broadcast-${broadcastId}`).result();
    expect(result).toMatchObject({ status: 'delivered' });

    // A second broadcast adds a second message (each keyed by its own broadcast).
    const again = await call(`/teams/${teamId}/broadcast`, { cookie: invitee.cookie }, 'POST', { message: 'Thanks!' });
    expect(again.status).toBe(202);
    await client.workflow.getHandle(`broadcast-${again.body.id as string}`).result();
    const history = await call(`/history/team:${teamId}`, { key: owner.key });
    expect((history.body.messages as Json[]).map((message) => message.content)).toEqual([
      text,
      `[Pelican crew] ${invitee.email}: Thanks!`,
    ]);
    expect(await telegramSent(chat, 3)).toHaveLength(3);
  });

  it('broadcasts to a linked LINE chat, once', async () => {
    // The colleague (an API key account) links a LINE chat: a code from the agent service, `/link CODE` in LINE.
    const lineUser = newLineUser();
    await link('line', lineUser, { key: colleague.key });
    expect((await call('/auth/me', { key: colleague.key })).body.linked_apps).toEqual(['line']);

    const started = await call(`/teams/${teamId}/broadcast`, owner, 'POST', { message: 'Deploy freeze from Friday.' });
    expect(started.status).toBe(202);
    const broadcastId = started.body.id as string;
    const client = new Client({ connection: temporal });
    expect(await client.workflow.getHandle(`broadcast-${broadcastId}`).result()).toMatchObject({
      status: 'delivered',
    });
    const status = (await call(`/teams/${teamId}/broadcasts/${broadcastId}`, colleague)).body;
    expect(status).toMatchObject({ status: 'delivered', source: 'table' });
    const colleagueDelivery = (status.deliveries as Json[]).find((delivery) => delivery.user_id === colleague.userId);
    expect(colleagueDelivery).toMatchObject({ status: 'delivered', session: 'delivered' });
    expect(colleagueDelivery!.channels).toEqual([{ platform: 'line', status: 'delivered' }]);

    // The LINE chat got the link confirmation and then the broadcast, once (the delivery is recorded after the send,
    // and the broadcast's workflow has ended: nothing more can come).
    const text = `[Pelican crew] ${owner.email}: Deploy freeze from Friday.`;
    expect(await sentTo('line', lineUser, 2)).toEqual([expect.stringContaining('Linked'), text]);
  });
});
