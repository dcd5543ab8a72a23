/**
 * The operator console's API (`/admin/api/*`, docs/web-app.md, "Operator console") through HTTP on a test platform
 * with a real SMTP server: operators are the master key and admins' logged-in browsers (the role granted by
 * `npm run admin -- grant-admin`, run here against the platform's database, or the address in ADMIN_EMAILS); everyone
 * else, an admin's own API key included, gets 403 from every route (the audit log and the plan change among them) and
 * changes nothing. An operator finds users by the start of their address or by id, in keyset pages; adjusts credits
 * (the ledger's entry carries the reason, the balance moves by exactly the amount, a repeated Idempotency-Key moves
 * nothing, bad input is a 400 that writes nothing); revokes a key with a reason (then refused with 401); changes a
 * plan and custom limits, which the account's very next request meets. The gateway's own operator writes (a plan
 * change, a key made by the master key with its account when new) and the shell's key creation are operator actions
 * too. Every action appears exactly once in the audit log, with its reason, its operator and its request's id (a key's
 * secret never), written in the action's own transaction (a row that cannot be written undoes the action; a refused
 * request writes nothing), and the database refuses to change or delete a row. The operator also
 * reads recent turns and requests with their traces and Temporal Web UI links, failed workflows with their failures,
 * provider health with a breaker the simulator's faults opened, and the platform's figures.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import pg from 'pg';
import { adminContracts } from '../../api/agents/routes/admin/contract.ts';
import { callDirective } from '../helpers/agents.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let smtp: TestSmtp;
let database: pg.Pool;
let alice: { id: string; key: string; user_id: string };
let bob: { id: string; key: string; user_id: string };
/** Logged in, then made an admin with `npm run admin -- grant-admin`. */
let boss: { email: string; cookie: string; userId: string };
/** An admin by ADMIN_EMAILS. */
let envAdmin: { email: string; cookie: string; userId: string };
/** Logged in, not an admin. */
let person: { email: string; cookie: string; userId: string };
const envAdminEmail = `ops-${randomBytes(3).toString('hex')}@example.com`;
const aliceEmail = `alice-${randomBytes(3).toString('hex')}@example.com`;
const execFileAsync = promisify(execFile);
const repository = fileURLToPath(new URL('../..', import.meta.url));

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({
    SMTP_URL: smtp.url,
    // Capitals and spaces: the setting is compared as addresses are stored (normalised).
    ADMIN_EMAILS: ` ${envAdminEmail.toUpperCase()} , nobody@example.com`,
    TEMPORAL_UI_URL: 'http://temporal-ui.example:8080/',
    BREAKER_FAILURE_THRESHOLD: '2',
  });
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  alice = await platform.createKey(aliceEmail);
  bob = await platform.createKey(`bob-${randomBytes(3).toString('hex')}@example.com`);
  boss = await login(`boss-${randomBytes(3).toString('hex')}@example.com`);
  envAdmin = await login(envAdminEmail);
  person = await login(`person-${randomBytes(3).toString('hex')}@example.com`);
  const granted = await admin(['grant-admin', '--email', boss.email.toUpperCase()]);
  expect(JSON.parse(granted.stdout)).toEqual({ user_id: boss.userId, email: boss.email, role: 'admin' });
}, 180_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
  await smtp?.close();
});

/** `npm run admin -- …` against the platform's database. */
function admin(args: string[]) {
  return execFileAsync(process.execPath, ['scripts/admin.ts', ...args], {
    cwd: repository,
    env: { ...process.env, DATABASE_URL: platform.databaseUrl, NODE_OPTIONS: '' },
  });
}

/** Logs a person in by the magic link of the mail; their session cookie and user id. */
async function login(email: string) {
  const sent = await platform.agents('/auth/register', { method: 'POST', body: JSON.stringify({ email }) });
  expect(sent.status).toBe(200);
  const mail = await smtp.nextMail(email);
  const token = /\/auth\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
  const verified = await platform.agents(`/auth/verify?token=${token}`, { headers: { accept: 'application/json' } });
  expect(verified.status).toBe(200);
  const cookie = verified.headers
    .getSetCookie()
    .find((header) => header.startsWith('tessera_session='))!
    .split(';')[0]!;
  return { email, cookie, userId: ((await verified.json()) as Json).user.id as string };
}

type Caller = { key: string } | { cookie: string } | Record<string, never>;

async function call(
  path: string,
  caller: Caller,
  init: RequestInit & { idempotencyKey?: string } = {},
): Promise<{ status: number; body: Json; requestId: string | null }> {
  const headers = new Headers(init.headers);
  if (init.idempotencyKey) headers.set('idempotency-key', init.idempotencyKey);
  const response = await platform.agents(path, { ...init, ...caller, headers });
  return {
    status: response.status,
    body: (await response.json()) as Json,
    requestId: response.headers.get('x-request-id'),
  };
}

const operator = () => ({ key: platform.masterKey });

/** Alice's balance as her own account shows it. */
async function balanceOf(user: { key: string }): Promise<number> {
  return ((await call('/auth/me', user)).body.credits as Json).balance as number;
}

/** The audit log's rows about a user (all of them without one), oldest first, read from the database. */
async function auditRows(userId?: string): Promise<Json[]> {
  const { rows } = await database.query(
    'select * from admin_audit where $1::text is null or target_user_id = $1 order by id',
    [userId ?? null],
  );
  return rows as Json[];
}

async function ledgerRows(userId: string): Promise<number> {
  const { rows } = await database.query<{ count: string }>('select count(*) from credit_ledger where user_id = $1', [
    userId,
  ]);
  return Number(rows[0]!.count);
}

function adjust(
  userId: string,
  caller: Caller,
  body: unknown,
  idempotencyKey?: string,
  headers: Record<string, string> = {},
) {
  return call(`/admin/api/users/${userId}/credits`, caller, {
    method: 'POST',
    body: JSON.stringify(body),
    headers,
    ...(idempotencyKey ? { idempotencyKey } : {}),
  });
}

/** A finished agent turn of `key`'s in a new session. */
async function chatTurn(key: string, message: string): Promise<string> {
  const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
    method: 'POST',
    key,
    body: JSON.stringify({ message, preferred_agents: ['general'] }),
  });
  expect(response.status).toBe(200);
  const events = await readSse(response);
  const accepted = events.find((event) => (event.data as Json).turn_id)?.data as Json | undefined;
  expect(events.some((event) => (event.data as Json).type === 'cost')).toBe(true);
  return accepted!.turn_id as string;
}

describe('who may use the console', () => {
  it('tells an admin’s browser it is one, and nobody else', async () => {
    expect((await call('/auth/me', { cookie: boss.cookie })).body).toMatchObject({ logged_in: true, admin: true });
    expect((await call('/auth/me', { cookie: envAdmin.cookie })).body).toMatchObject({ admin: true });
    expect((await call('/auth/me', { cookie: person.cookie })).body.admin).toBeUndefined();
    expect((await call('/auth/me', alice)).body.admin).toBeUndefined();
  });

  it('answers every route to the master key and to admins’ browsers, 403 to anyone else and 401 to nobody', async () => {
    const bossKey = (
      await call('/api/keys', { cookie: boss.cookie }, { method: 'POST', body: JSON.stringify({ name: 'boss' }) })
    ).body.key as string;
    const balance = await balanceOf(alice);
    const rows = await ledgerRows(alice.user_id);
    const audited = (await auditRows()).length;
    const refused: Caller[] = [alice, { cookie: person.cookie }, { key: bossKey }];
    // The audit log and the plan change among them.
    expect(adminContracts.map((contract) => `${contract.method} ${contract.path}`)).toEqual(
      expect.arrayContaining(['GET /admin/api/audit', 'PATCH /admin/api/users/:user_id/account']),
    );
    const bodies: Record<string, unknown> = {
      POST: { amount: 5, reason: 'not allowed' },
      PATCH: { plan: 'free', reason: 'not allowed' },
    };
    for (const contract of adminContracts) {
      const path = contract.path
        .replace(':user_id', alice.user_id)
        .replace(':key_id', alice.id)
        .replace(':turn_id', 'chat-none-1')
        .replace(':request_id', 'none');
      const init = {
        method: contract.method,
        ...(bodies[contract.method] ? { body: JSON.stringify(bodies[contract.method]) } : {}),
        idempotencyKey: randomUUID(),
      };
      for (const caller of refused) {
        const answer = await call(path, caller, init);
        expect({ route: `${contract.method} ${path}`, status: answer.status, type: answer.body.error?.type }).toEqual({
          route: `${contract.method} ${path}`,
          status: 403,
          type: 'permission_denied',
        });
      }
      expect((await call(path, {}, init)).status).toBe(401);
    }
    // Nothing moved, nothing was recorded, alice is on her plan and her key still works.
    expect(await balanceOf(alice)).toBe(balance);
    expect(await ledgerRows(alice.user_id)).toBe(rows);
    expect(await auditRows()).toHaveLength(audited);
    expect((await call('/auth/me', alice)).body.user.plan).toBe('business');
    for (const caller of [operator(), { cookie: boss.cookie }, { cookie: envAdmin.cookie }]) {
      expect((await call('/admin/api/users?limit=1', caller)).status).toBe(200);
      expect((await call(`/admin/api/users/${alice.user_id}`, caller)).status).toBe(200);
    }
    // Another area's routes do not meet the console's check.
    expect((await call('/agents', alice)).status).toBe(200);
  });

  it('takes the role back with revoke-admin', async () => {
    const listed = JSON.parse((await admin(['list-admins'])).stdout) as Json;
    expect(listed.admins).toEqual([{ user_id: boss.userId, email: boss.email }]);
    const temporary = await login(`temp-${randomBytes(3).toString('hex')}@example.com`);
    await admin(['grant-admin', '--email', temporary.email, '--reason', 'On call this week']);
    expect((await call('/admin/api/users?limit=1', { cookie: temporary.cookie })).status).toBe(200);
    await admin(['revoke-admin', '--email', temporary.email]);
    expect((await call('/admin/api/users?limit=1', { cookie: temporary.cookie })).status).toBe(403);
    // Both in the audit log, as the shell's (the reason when one was given).
    const log = await call(`/admin/api/audit?user_id=${temporary.userId}`, operator());
    expect(log.body.entries).toEqual([
      expect.objectContaining({
        action: 'role.revoke',
        actor: 'shell',
        actor_email: null,
        user_id: temporary.userId,
        user_email: temporary.email,
        reason: null,
        details: { before: 'admin', after: 'user' },
        request_id: null,
      }),
      expect.objectContaining({
        action: 'role.grant',
        reason: 'On call this week',
        details: { before: 'user', after: 'admin' },
      }),
    ]);
    const bossGrant = await call(`/admin/api/audit?user_id=${boss.userId}&action=role.grant`, operator());
    expect(bossGrant.body.entries).toEqual([expect.objectContaining({ actor: 'shell', reason: null })]);
    const unknown = (await admin(['grant-admin', '--email', 'nobody-here@example.com']).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    )) as { code: number; stderr: string };
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No account has the address/);
  });
});

describe('users, credits and keys', () => {
  it('finds users by the start of their address or by id, a page at a time', async () => {
    const found = await call(`/admin/api/users?q=${encodeURIComponent(alice.user_id)}`, operator());
    expect(found.body).toEqual({ users: [expect.objectContaining({ id: alice.user_id })], limit: 25, next: null });
    const byAddress = await call('/admin/api/users?q=ALICE-', { cookie: boss.cookie });
    expect(byAddress.status).toBe(200);
    expect(byAddress.body).toMatchObject({ limit: 25, next: null });
    expect(byAddress.body.users).toHaveLength(1);
    expect(byAddress.body.users[0]).toMatchObject({
      id: alice.user_id,
      email: expect.stringMatching(/^alice-/),
      plan: 'business',
      role: 'user',
      admin: false,
      keys: 1,
      credits: { balance: expect.any(Number), held: 0, available: expect.any(Number) },
    });
    // The start of the address, not any part of it; a wildcard is a character like any other.
    for (const part of [alice.user_id.slice(2, 10), aliceEmail.slice(3, 10), aliceEmail.split('@')[1]!]) {
      expect({ part, users: (await call(`/admin/api/users?q=${part}`, operator())).body.users }).toEqual({
        part,
        users: [],
      });
    }
    expect((await call('/admin/api/users?q=%25', operator())).body.users).toEqual([]);
    expect((await call('/admin/api/users?q=_', operator())).body.users).toEqual([]);

    // A search's pages: in address order, each continuing after the last.
    const tag = randomBytes(3).toString('hex');
    const pagers = await Promise.all(
      ['d', 'a', 'c', 'e', 'b'].map((letter) => platform.createKey(`pager-${tag}-${letter}@example.com`)),
    );
    const pages: Json[][] = [];
    let next: string | null = null;
    do {
      const query: string = `q=PAGER-${tag}&limit=2${next ? `&after=${next}` : ''}`;
      const page = await call(`/admin/api/users?${query}`, operator());
      expect(page.status).toBe(200);
      pages.push(page.body.users);
      next = page.body.next;
    } while (next);
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(pages.flat().map((user: Json) => user.email)).toEqual(
      ['a', 'b', 'c', 'd', 'e'].map((letter) => `pager-${tag}-${letter}@example.com`),
    );
    expect(new Set(pages.flat().map((user: Json) => user.id))).toEqual(new Set(pagers.map((pager) => pager.user_id)));

    // Everyone, newest first, in pages that end where the list does.
    const { rows } = await database.query<{ id: string }>('select id from users order by created_at desc, id desc');
    const everyone: string[] = [];
    next = null;
    do {
      const page = await call(`/admin/api/users?limit=3${next ? `&after=${next}` : ''}`, operator());
      everyone.push(...page.body.users.map((user: Json) => user.id));
      next = page.body.next;
    } while (next);
    expect(everyone).toEqual(rows.map((row) => row.id));
    const admins = (await call('/admin/api/users?limit=100', operator())).body.users.filter((user: Json) => user.admin);
    expect(admins.map((user: Json) => user.id).sort()).toEqual([boss.userId, envAdmin.userId].sort());

    // A cursor of one listing is refused by another, and a made-up one.
    const searchPage = await call(`/admin/api/users?q=pager-${tag}&limit=1`, operator());
    const everyonePage = await call('/admin/api/users?limit=1', operator());
    for (const [query, message] of [
      [`after=${searchPage.body.next}`, /of everyone/],
      [`q=pager-${tag}&after=${everyonePage.body.next}`, /of this search/],
      ['after=bm90LWpzb24', /next/],
      [`after=${Buffer.from('{"email":1}').toString('base64url')}`, /./],
    ] as const) {
      const refused = await call(`/admin/api/users?${query}`, operator());
      expect({ query, status: refused.status, param: refused.body.error?.param }).toEqual({
        query,
        status: 400,
        param: expect.stringMatching(/^after/),
      });
      expect(refused.body.error.message).toMatch(message);
    }

    const detail = await call(`/admin/api/users/${alice.user_id}`, operator());
    expect(detail.body.user).toMatchObject({ id: alice.user_id, plan_cycle_start: expect.any(String) });
    expect(detail.body.api_keys).toEqual([
      expect.objectContaining({ id: alice.id, key_preview: expect.stringMatching(/^te_/), revoked_at: null }),
    ]);
    expect((await call('/admin/api/users/user_nobody', operator())).status).toBe(404);
  });

  it('refuses bad queries with a 400 naming the field', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['offset=5', ''],
      ['limit=ten', 'limit'],
      [`q=${'a'.repeat(255)}`, 'q'],
      ['sort=email', ''],
    ] as const) {
      const refused = await call(`/admin/api/users?${query}`, operator());
      expect(refused.status).toBe(400);
      expect(refused.body.error.type).toBe('invalid_request');
      if (param) expect(refused.body.error.param).toBe(param);
    }
    expect((await call('/admin/api/users/not%20an%20id', operator())).status).toBe(400);
    expect((await call(`/admin/api/users/${alice.user_id}/ledger?before=abc`, operator())).status).toBe(400);
    expect((await call(`/admin/api/users/${alice.user_id}/ledger?kind=gift`, operator())).status).toBe(400);
    expect((await call('/admin/api/turns?status=lost', operator())).status).toBe(400);
    expect((await call('/admin/api/workflows/failed?hours=0', operator())).status).toBe(400);
    expect((await call('/admin/api/overview?days=91', operator())).status).toBe(400);
  });

  it('adjusts credits with a reason written to the ledger, once per Idempotency-Key', async () => {
    const before = await balanceOf(alice);
    const key = randomUUID();
    const adjusted = await adjust(alice.user_id, { cookie: boss.cookie }, { amount: 1234, reason: ' Goodwill ' }, key);
    expect(adjusted.status).toBe(201);
    expect(adjusted.body).toMatchObject({
      entry: { kind: 'adjust', amount: 1234, note: `Goodwill (by ${boss.email})`, workflow_id: null },
      credits: { balance: before + 1234 },
      replayed: false,
    });
    expect(await balanceOf(alice)).toBe(before + 1234);
    // The ledger shows it first, with the reason.
    const ledger = await call(`/admin/api/users/${alice.user_id}/ledger?limit=1`, { cookie: boss.cookie });
    expect(ledger.body.entries).toEqual([adjusted.body.entry]);
    expect(ledger.body.next_before).toBe(adjusted.body.entry.id);
    // Newest first by the entry's number (not its text: entry 10 comes before entry 9).
    const all = (await call(`/admin/api/users/${alice.user_id}/ledger?limit=200`, operator())).body.entries as Json[];
    const ids = all.map((entry) => BigInt(entry.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
    const older = await call(`/admin/api/users/${alice.user_id}/ledger?before=${ledger.body.next_before}`, operator());
    expect(older.body.entries.length).toBeGreaterThan(0);
    expect(older.body.entries.every((entry: Json) => Number(entry.id) < Number(adjusted.body.entry.id))).toBe(true);
    const adjustments = await call(`/admin/api/users/${alice.user_id}/ledger?kind=adjust`, operator());
    expect(adjustments.body.entries.map((entry: Json) => entry.id)).toEqual([adjusted.body.entry.id]);

    // The same key again (a double click, a retry): the first adjustment, nothing moved.
    const repeated = await adjust(alice.user_id, { cookie: boss.cookie }, { amount: 1234, reason: 'Goodwill' }, key);
    expect(repeated.status).toBe(200);
    expect(repeated.body).toMatchObject({ entry: adjusted.body.entry, replayed: true });
    expect(await balanceOf(alice)).toBe(before + 1234);
    // The same key for something else: refused.
    const reused = await adjust(alice.user_id, { cookie: boss.cookie }, { amount: 99, reason: 'Goodwill' }, key);
    expect(reused.status).toBe(409);
    expect(reused.body.error.param).toBe('Idempotency-Key');

    // Two at once with one key (the button pressed twice): one entry.
    const twin = randomUUID();
    const twins = await Promise.all(
      [0, 1].map(() => adjust(alice.user_id, operator(), { amount: -34, reason: 'Refund reversed' }, twin)),
    );
    expect(twins.map((answer) => answer.status).sort()).toEqual([200, 201]);
    expect(twins[0]!.body.entry).toEqual(twins[1]!.body.entry);
    expect(twins[0]!.body.entry.note).toBe('Refund reversed (by the master key)');
    expect(await balanceOf(alice)).toBe(before + 1200);

    // In the audit log once each, though each was sent more than once: who, to whom, why, which request.
    const log = await call(`/admin/api/audit?user_id=${alice.user_id}&action=credits.adjust`, { cookie: boss.cookie });
    expect(log.body).toEqual({
      entries: [
        {
          id: expect.any(String),
          at: expect.any(String),
          actor: 'master-key',
          actor_email: null,
          action: 'credits.adjust',
          user_id: alice.user_id,
          user_email: aliceEmail,
          reason: 'Refund reversed',
          details: { amount: -34, ledger_entry_id: twins[0]!.body.entry.id },
          request_id: twins.find((answer) => answer.status === 201)!.requestId,
        },
        {
          id: expect.any(String),
          at: expect.any(String),
          actor: boss.userId,
          actor_email: boss.email,
          action: 'credits.adjust',
          user_id: alice.user_id,
          user_email: aliceEmail,
          reason: 'Goodwill',
          details: { amount: 1234, ledger_entry_id: adjusted.body.entry.id },
          request_id: adjusted.requestId,
        },
      ],
      next_before: null,
    });
    expect(adjusted.requestId).toMatch(/^req_/);
    expect(new Date(log.body.entries[1].at).getTime()).toBeLessThanOrEqual(new Date(log.body.entries[0].at).getTime());
  });

  it('refuses a debit past the balance and bad input, writing nothing', async () => {
    const balance = await balanceOf(alice);
    const rows = await ledgerRows(alice.user_id);
    const audited = (await auditRows()).length;
    const short = await adjust(alice.user_id, operator(), { amount: -(balance + 1), reason: 'Too much' }, randomUUID());
    expect(short.status).toBe(409);
    expect(short.body.error.message).toMatch(/available/);
    for (const body of [
      { amount: 0, reason: 'nothing' },
      { amount: 1.5, reason: 'half' },
      { amount: '10', reason: 'text' },
      { amount: 100_000_001, reason: 'too much' },
      { amount: 10 },
      { amount: 10, reason: '   ' },
      { amount: 10, reason: 'x'.repeat(201) },
      { amount: 10, reason: 'extra', note: 'field' },
    ]) {
      const refused = await adjust(alice.user_id, { cookie: boss.cookie }, body, randomUUID());
      expect({ body, status: refused.status, type: refused.body.error?.type }).toEqual({
        body,
        status: 400,
        type: 'invalid_request',
      });
    }
    const missingKey = await adjust(alice.user_id, operator(), { amount: 10, reason: 'no key' });
    expect(missingKey).toMatchObject({ status: 400, body: { error: { param: 'idempotency-key' } } });
    const badKey = await adjust(alice.user_id, operator(), { amount: 10, reason: 'bad key' }, 'two words');
    expect(badKey.status).toBe(400);
    expect((await adjust('user_nobody', operator(), { amount: 10, reason: 'ghost' }, randomUUID())).status).toBe(404);
    // An admin's browser on another origin (CSRF): refused before anything.
    const crossSite = await adjust(
      alice.user_id,
      { cookie: boss.cookie },
      { amount: 10, reason: 'forged' },
      randomUUID(),
      {
        origin: 'https://evil.example',
      },
    );
    expect(crossSite.status).toBe(403);
    expect(await balanceOf(alice)).toBe(balance);
    expect(await ledgerRows(alice.user_id)).toBe(rows);
    expect(await auditRows()).toHaveLength(audited);
  });

  it('revokes a user’s key with a reason: it is refused from then on', async () => {
    const spare = (await call('/api/keys', alice, { method: 'POST', body: JSON.stringify({ name: 'spare' }) })).body;
    expect((await call('/auth/me', { key: spare.key })).status).toBe(200);
    const revoke = (userId: string, caller: Caller, body: unknown) =>
      call(`/admin/api/users/${userId}/keys/${spare.id}/revoke`, caller, {
        method: 'POST',
        body: JSON.stringify(body),
      });
    const audited = (await auditRows()).length;
    // Not bob's key to revoke under alice's name; and a reason is required.
    expect((await revoke(bob.user_id, operator(), { reason: 'Leaked' })).status).toBe(404);
    for (const body of [{}, { reason: ' ' }, { reason: 'x'.repeat(201) }, { reason: 'Leaked', extra: 1 }]) {
      expect((await revoke(alice.user_id, operator(), body)).status).toBe(400);
    }
    expect((await call('/auth/me', { key: spare.key })).status).toBe(200);
    expect(await auditRows()).toHaveLength(audited);
    const revoked = await revoke(alice.user_id, { cookie: envAdmin.cookie }, { reason: 'Leaked in a public repo' });
    expect(revoked).toMatchObject({ status: 200, body: { revoked: true, id: spare.id, user_id: alice.user_id } });
    expect((await call('/auth/me', { key: spare.key })).status).toBe(401);
    expect((await call('/auth/me', alice)).status).toBe(200);
    // Once: a second revocation finds no live key, and records nothing.
    expect((await revoke(alice.user_id, operator(), { reason: 'Again' })).status).toBe(404);
    const keys = (await call(`/admin/api/users/${alice.user_id}`, operator())).body.api_keys as Json[];
    expect(keys.find((key) => key.id === spare.id)!.revoked_at).toEqual(expect.any(String));
    const log = await call(`/admin/api/audit?user_id=${alice.user_id}&action=key.revoke`, operator());
    expect(log.body.entries).toEqual([
      expect.objectContaining({
        actor: envAdmin.userId,
        actor_email: envAdminEmail,
        reason: 'Leaked in a public repo',
        details: { key_id: spare.id, name: 'spare', preview: expect.stringMatching(/^te_/) },
        request_id: revoked.requestId,
      }),
    ]);
    expect(await auditRows()).toHaveLength(audited + 1);
  });
});

describe('plans and limits, and the audit log', () => {
  const messages = [{ role: 'user' as const, content: 'Hello' }];
  const refusedModel = (key: string, model: string) =>
    platform
      .openai(key)
      .chat.completions.create({ model, messages })
      .then(
        () => null,
        (error: unknown) => error,
      );
  const changeAccount = (userId: string, caller: Caller, body: unknown) =>
    call(`/admin/api/users/${userId}/account`, caller, { method: 'PATCH', body: JSON.stringify(body) });

  it('changes a plan and custom limits, which the account’s very next request meets', async () => {
    const email = `carol-${randomBytes(3).toString('hex')}@example.com`;
    const carol = await platform.createKey(email, 'free');
    expect(await refusedModel(carol.key, 'gpt-4o')).toBeInstanceOf(OpenAI.PermissionDeniedError);

    const upgraded = await changeAccount(
      carol.user_id,
      { cookie: boss.cookie },
      {
        plan: 'starter',
        reason: 'Upgrade agreed on the phone',
      },
    );
    expect(upgraded.status).toBe(200);
    expect(upgraded.body).toMatchObject({
      user_id: carol.user_id,
      plan: 'starter',
      allowed_models: expect.arrayContaining(['gpt-4o', 'gpt-4o-mini']),
    });
    // The next request, at once, with the key whose principal this process had cached.
    const served = await platform.openai(carol.key).chat.completions.create({ model: 'gpt-4o', messages });
    expect(served.model).toMatch(/^gpt-4o/);
    expect((await call('/auth/me', carol)).body.user.plan).toBe('starter');

    const limited = await changeAccount(carol.user_id, operator(), {
      custom_limits: { per_hour: 7, per_day: null, models: ['gpt-4o-mini'] },
      reason: 'Trial limits',
    });
    expect(limited.body).toMatchObject({ plan: 'starter', allowed_models: ['gpt-4o-mini'] });
    const next = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: carol.key,
      body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
    });
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-limit-hour')).toBe('7');
    // Unlimited per day: the window is not counted, nor reported.
    expect(next.headers.get('x-ratelimit-limit-day')).toBeNull();
    expect(await refusedModel(carol.key, 'gpt-4o')).toBeInstanceOf(OpenAI.PermissionDeniedError);

    const cleared = await changeAccount(
      carol.user_id,
      { cookie: boss.cookie },
      {
        custom_limits: null,
        reason: 'Trial over',
      },
    );
    expect(cleared.status).toBe(200);
    const again = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: carol.key,
      body: JSON.stringify({ model: 'gpt-4o', messages }),
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-limit-hour')).toBe('120');

    // Each change once in the audit log, newest first, with its reason, its operator and its request.
    const log = await call(`/admin/api/audit?user_id=${carol.user_id}`, { cookie: envAdmin.cookie });
    expect(log.body.entries).toEqual([
      expect.objectContaining({
        action: 'account.update',
        actor: boss.userId,
        reason: 'Trial over',
        details: {
          before: { plan: 'starter', custom_limits: { per_hour: 7, per_day: null, models: ['gpt-4o-mini'] } },
          after: { plan: 'starter', custom_limits: null },
        },
        request_id: cleared.requestId,
      }),
      expect.objectContaining({
        action: 'account.update',
        actor: 'master-key',
        actor_email: null,
        reason: 'Trial limits',
        request_id: limited.requestId,
      }),
      expect.objectContaining({
        action: 'account.update',
        actor: boss.userId,
        actor_email: boss.email,
        user_email: email,
        reason: 'Upgrade agreed on the phone',
        details: {
          before: { plan: 'free', custom_limits: null },
          after: { plan: 'starter', custom_limits: null },
          new_cycle: { credits_granted: 50_000 },
        },
        request_id: upgraded.requestId,
      }),
      // Her key and account, made by the master key (platform.createKey).
      expect.objectContaining({
        action: 'key.create',
        actor: 'master-key',
        reason: null,
        details: expect.objectContaining({ account_created: true, plan: 'free' }),
      }),
    ]);
    // The new cycle's credits, granted by the same change.
    const grants = await call(`/admin/api/users/${carol.user_id}/ledger?kind=grant`, operator());
    expect(grants.body.entries.map((entry: Json) => entry.amount)).toEqual([50_000, 100]);
  });

  it('refuses a bad change, changing and recording nothing', async () => {
    const dave = await platform.createKey(`dave-${randomBytes(3).toString('hex')}@example.com`, 'free');
    const audited = (await auditRows()).length;
    for (const body of [
      { plan: 'starter' },
      { plan: 'starter', reason: '  ' },
      { plan: 'starter', reason: 'x'.repeat(201) },
      { plan: 'gold', reason: 'No such plan' },
      { reason: 'Nothing to change' },
      { custom_limits: { per_hour: 0 }, reason: 'Zero' },
      { custom_limits: { models: [] }, reason: 'No models' },
      { custom_limits: { models: ['gpt-4o', 'gpt-imaginary'] }, reason: 'A typo' },
      { custom_limits: { per_minute: 5 }, reason: 'Unknown limit' },
      { plan: 'pro', reason: 'Extra', note: 'field' },
    ]) {
      const refused = await changeAccount(dave.user_id, operator(), body);
      expect({ body, status: refused.status, type: refused.body.error?.type }).toEqual({
        body,
        status: 400,
        type: 'invalid_request',
      });
    }
    const typo = await changeAccount(dave.user_id, operator(), {
      custom_limits: { models: ['gpt-imaginary'] },
      reason: 'A typo',
    });
    expect(typo.body.error).toMatchObject({
      param: 'custom_limits.models',
      message: expect.stringMatching(/gpt-imaginary/),
    });
    expect((await changeAccount('user_nobody', operator(), { plan: 'pro', reason: 'Ghost' })).status).toBe(404);
    expect((await call('/auth/me', dave)).body.user.plan).toBe('free');
    expect(await auditRows()).toHaveLength(audited);
  });

  /** A `key.create` entry's details for a key without a name on a new free account (spread and override). */
  const made = { name: null, preview: expect.stringMatching(/^te_.{4}….{4}$/), account_created: true, plan: 'free' };
  const createKey = (key: string, body: unknown) =>
    platform.fetch('/api/v1/apikeys', { method: 'POST', key, body: JSON.stringify(body) });
  const usersWith = async (email: string) =>
    (await database.query('select id from users where email = $1', [email])).rows.length;

  it('records the gateway’s own PATCH /api/v1/account/{id} as the master key’s', async () => {
    const erin = await platform.createKey(`erin-${randomBytes(3).toString('hex')}@example.com`, 'free');
    const patch = (key: string, body: unknown) =>
      platform.fetch(`/api/v1/account/${erin.user_id}`, { method: 'PATCH', key, body: JSON.stringify(body) });
    expect((await patch(erin.key, { plan: 'pro', reason: 'Self-service' })).status).toBe(403);
    const plain = await patch(platform.masterKey, { plan: 'pro' });
    expect(plain.status).toBe(200);
    const reasoned = await patch(platform.masterKey, { custom_limits: { per_day: 50 }, reason: 'Billing ticket 42' });
    expect(reasoned.status).toBe(200);
    const log = await call(`/admin/api/audit?user_id=${erin.user_id}`, operator());
    expect(log.body.entries).toEqual([
      expect.objectContaining({
        actor: 'master-key',
        reason: 'Billing ticket 42',
        request_id: reasoned.headers.get('x-request-id'),
      }),
      expect.objectContaining({ actor: 'master-key', reason: null, request_id: plain.headers.get('x-request-id') }),
      expect.objectContaining({ action: 'key.create', actor: 'master-key', details: { key_id: erin.id, ...made } }),
    ]);
    expect(plain.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('records the gateway’s POST /api/v1/apikeys by the master key, with its reason and never the secret', async () => {
    const email = `gina-${randomBytes(3).toString('hex')}@example.com`;
    const first = await createKey(platform.masterKey, {
      email: email.toUpperCase(),
      plan: 'starter',
      name: 'ci',
      reason: '  Onboarding ticket 7 ',
    });
    expect(first.status).toBe(201);
    const gina = (await first.json()) as Json;
    // Another key for the same account, with no reason; the plan named is not the account's and is not applied.
    const second = await createKey(platform.masterKey, { email, plan: 'pro' });
    expect(second.status).toBe(201);
    const again = (await second.json()) as Json;
    expect(again.user_id).toBe(gina.user_id);
    expect((await call('/auth/me', { key: again.key as string })).body.user.plan).toBe('starter');

    // Read by an admin's browser: each creation once, newest first, with the master key, the reason and the request.
    const log = await call(`/admin/api/audit?user_id=${gina.user_id}`, { cookie: boss.cookie });
    expect(log.status).toBe(200);
    expect(log.body.entries).toEqual([
      expect.objectContaining({
        action: 'key.create',
        actor: 'master-key',
        actor_email: null,
        user_id: gina.user_id,
        user_email: email,
        reason: null,
        details: { ...made, key_id: again.id, account_created: false, plan: 'starter' },
        request_id: second.headers.get('x-request-id'),
      }),
      expect.objectContaining({
        action: 'key.create',
        actor: 'master-key',
        reason: 'Onboarding ticket 7',
        details: { ...made, key_id: gina.id, name: 'ci', plan: 'starter' },
        request_id: first.headers.get('x-request-id'),
      }),
    ]);
    expect(first.headers.get('x-request-id')).toMatch(/^req_/);
    // Neither secret anywhere in the log, as the API answers it or as the table holds it.
    const stored = JSON.stringify(await auditRows(gina.user_id));
    for (const secret of [gina.key as string, again.key as string]) {
      expect(JSON.stringify(log.body)).not.toContain(secret);
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(secret.slice(3, 20));
    }

    // A key with no address: a new account of its own, on the free plan by default.
    const bare = await createKey(platform.masterKey, { name: 'kiosk' });
    expect(bare.status).toBe(201);
    const kiosk = (await bare.json()) as Json;
    const kioskLog = await call(`/admin/api/audit?user_id=${kiosk.user_id}&action=key.create`, operator());
    expect(kioskLog.body.entries).toEqual([
      expect.objectContaining({ user_email: null, details: { ...made, key_id: kiosk.id, name: 'kiosk' } }),
    ]);

    // Two keys at once for one new address: one account, made once, and each key recorded once.
    const twinEmail = `jo-${randomBytes(3).toString('hex')}@example.com`;
    const twins = await Promise.all(
      ['one', 'two'].map(async (name) => {
        const response = await createKey(platform.masterKey, { email: twinEmail, name });
        expect(response.status).toBe(201);
        return (await response.json()) as Json;
      }),
    );
    expect(twins[1]!.user_id).toBe(twins[0]!.user_id);
    const twinLog = await call(`/admin/api/audit?user_id=${twins[0]!.user_id}`, operator());
    expect(
      twinLog.body.entries.map((entry: Json) => [entry.details.name, entry.details.account_created]).sort(),
    ).toEqual([
      ['one', expect.any(Boolean)],
      ['two', expect.any(Boolean)],
    ]);
    expect(twinLog.body.entries.filter((entry: Json) => entry.details.account_created)).toHaveLength(1);

    // The shell's create-key is the same operator action, as the shell's.
    const shellEmail = `hank-${randomBytes(3).toString('hex')}@example.com`;
    const printed = await admin(['create-key', '--email', shellEmail, '--plan', 'pro', '--reason', 'Partner trial']);
    const hank = JSON.parse(printed.stdout.slice(printed.stdout.lastIndexOf('{\n'))) as Json;
    const hankLog = await call(`/admin/api/audit?user_id=${hank.user_id}`, operator());
    expect(hankLog.body.entries).toEqual([
      expect.objectContaining({
        action: 'key.create',
        actor: 'shell',
        reason: 'Partner trial',
        details: { ...made, key_id: hank.key_id, plan: 'pro' },
        request_id: null,
      }),
    ]);
  });

  it('refuses a bad key creation, creating and recording nothing', async () => {
    const email = `ivan-${randomBytes(3).toString('hex')}@example.com`;
    const ivan = await platform.createKey(`ivan-own-${randomBytes(3).toString('hex')}@example.com`, 'free');
    const audited = (await auditRows()).length;
    for (const body of [
      { email, reason: '  ' },
      { email, reason: 'x'.repeat(201) },
      { email, reason: 7 },
      { email, plan: 'gold', reason: 'No such plan' },
      { email: 'not an address', reason: 'Typo' },
      { email, name: '', reason: 'Empty name' },
      { email, reason: 'Extra', note: 'field' },
    ]) {
      const refused = await createKey(platform.masterKey, body);
      expect({ body, status: refused.status, type: ((await refused.json()) as Json).error?.type }).toEqual({
        body,
        status: 400,
        type: 'invalid_request',
      });
    }
    // A user's key may not name a user, a plan or a reason.
    for (const body of [{ email }, { plan: 'pro' }, { name: 'mine', reason: 'Mine' }]) {
      expect({ body, status: (await createKey(ivan.key, body)).status }).toEqual({ body, status: 403 });
    }
    expect(await usersWith(email)).toBe(0);
    expect(await auditRows()).toHaveLength(audited);
    // A user's own key is the user's doing, not an operator's: not in the log.
    expect((await createKey(ivan.key, { name: 'mine' })).status).toBe(201);
    expect(await auditRows()).toHaveLength(audited);
  });

  it('reads the log newest first, a page at a time, of one user or one action', async () => {
    const all = (await auditRows()).reverse();
    expect(all.length).toBeGreaterThan(4);
    const ids: string[] = [];
    let before: string | null = null;
    do {
      const page = await call(`/admin/api/audit?limit=2${before ? `&before=${before}` : ''}`, { cookie: boss.cookie });
      expect(page.status).toBe(200);
      ids.push(...page.body.entries.map((entry: Json) => entry.id));
      before = page.body.next_before;
    } while (before);
    expect(ids).toEqual(all.map((row) => String(row.id)));
    const updates = await call('/admin/api/audit?action=account.update&limit=200', operator());
    expect(updates.body.entries.length).toBe(all.filter((row) => row.action === 'account.update').length);
    for (const query of ['action=credits.gift', 'before=abc', 'limit=0', 'limit=201', 'user_id=not%20an%20id', 'q=x']) {
      expect({ query, status: (await call(`/admin/api/audit?${query}`, operator())).status }).toEqual({
        query,
        status: 400,
      });
    }
  });

  it('keeps the log append-only, written in each action’s own transaction', async () => {
    const rows = await auditRows();
    // The database refuses to change or remove an entry, whoever asks.
    for (const statement of [
      `update admin_audit set reason = 'rewritten' where id = ${rows[0]!.id}`,
      `delete from admin_audit where id = ${rows[0]!.id}`,
      'truncate admin_audit',
    ]) {
      await expect(database.query(statement)).rejects.toThrow(/admin_audit is append-only/);
    }
    expect(await auditRows()).toEqual(rows);

    // An entry that cannot be written undoes its action: an adjustment, a revocation, a plan change, a key made with
    // its account.
    const frankEmail = `frank-${randomBytes(3).toString('hex')}@example.com`;
    const frank = await platform.createKey(frankEmail, 'free');
    const recorded = await auditRows();
    const newcomer = `grace-${randomBytes(3).toString('hex')}@example.com`;
    const balance = await balanceOf(frank);
    const ledger = await ledgerRows(frank.user_id);
    await database.query(`alter table admin_audit add constraint test_refused check (reason <> 'Refuse to record')`);
    try {
      const reason = 'Refuse to record';
      const adjusted = await adjust(frank.user_id, operator(), { amount: 50, reason }, randomUUID());
      const revoked = await call(`/admin/api/users/${frank.user_id}/keys/${frank.id}/revoke`, operator(), {
        method: 'POST',
        body: JSON.stringify({ reason }),
      });
      const changed = await changeAccount(frank.user_id, operator(), { plan: 'pro', reason });
      const keyed = await platform.fetch('/api/v1/apikeys', {
        method: 'POST',
        key: platform.masterKey,
        body: JSON.stringify({ email: newcomer, reason }),
      });
      const another = await platform.fetch('/api/v1/apikeys', {
        method: 'POST',
        key: platform.masterKey,
        body: JSON.stringify({ email: frankEmail, name: 'extra', reason }),
      });
      expect([adjusted.status, revoked.status, changed.status, keyed.status, another.status]).toEqual([
        500, 500, 500, 500, 500,
      ]);
    } finally {
      await database.query('alter table admin_audit drop constraint test_refused');
    }
    expect(await balanceOf(frank)).toBe(balance);
    expect(await ledgerRows(frank.user_id)).toBe(ledger);
    expect((await call('/auth/me', frank)).body.user.plan).toBe('free');
    expect((await database.query('select id from users where email = $1', [newcomer])).rows).toEqual([]);
    const { rows: frankKeys } = await database.query('select id from api_keys where user_id = $1', [frank.user_id]);
    expect(frankKeys).toEqual([{ id: frank.id }]);
    expect(await auditRows()).toEqual(recorded);
  });
});

describe('turns, requests and failed workflows', () => {
  it('lists recent turns and traces one: tools, ledger, provider attempts, its workflow', async () => {
    const turnId = await chatTurn(alice.key, `What is 6 * 7? ${callDirective('calculator', { expression: '6 * 7' })}`);
    await chatTurn(bob.key, 'Hello from Bob');
    const turns = await call(`/admin/api/turns?user_id=${alice.user_id}`, operator());
    expect(turns.body.turns.map((turn: Json) => turn.turn_id)).toEqual([turnId]);
    expect(turns.body.turns[0]).toMatchObject({
      user_id: alice.user_id,
      email: expect.stringMatching(/^alice-/),
      agent_id: 'general',
      status: 'done',
      credits: expect.any(Number),
      temporal_url: `http://temporal-ui.example:8080/namespaces/default/workflows/${encodeURIComponent(turnId)}`,
    });
    expect(turns.body.turns[0].credits).toBeGreaterThan(0);
    const all = await call('/admin/api/turns?status=done', { cookie: boss.cookie });
    expect(all.body.turns.map((turn: Json) => turn.user_id)).toEqual(
      expect.arrayContaining([alice.user_id, bob.user_id]),
    );

    const trace = await call(`/admin/api/turns/${turnId}`, { cookie: boss.cookie });
    expect(trace.status).toBe(200);
    expect(trace.body).toMatchObject({
      turn_id: turnId,
      tool_calls: [{ name: 'calculator', ok: true }],
      workflow: {
        status: 'completed',
        run_id: expect.any(String),
        history_length: expect.any(Number),
        temporal_url: expect.stringMatching(/\/workflows\/chat-[^/]+\/[0-9a-f-]+\/history$/),
      },
      trace_error: null,
      pending_approval: null,
    });
    expect(trace.body.attempts.length).toBeGreaterThanOrEqual(2);
    expect(trace.body.attempts[0]).toMatchObject({ provider: expect.any(String), outcome: 'succeeded' });
    const settled = trace.body.ledger.filter((entry: Json) => entry.kind === 'settle' && entry.workflow_id === turnId);
    expect(settled.reduce((sum: number, entry: Json) => sum + entry.amount, 0)).toBe(trace.body.credits);
    // The turn's ledger: its own model calls' entries, and its routing call's when it was routed (not here: the
    // agent was named).
    expect(trace.body.routing_workflow_id).toBeNull();
    expect(new Set(trace.body.ledger.map((entry: Json) => entry.workflow_id))).toEqual(new Set([turnId]));
    expect((await call('/admin/api/turns/chat-none-1', operator())).status).toBe(404);
  });

  it('lists recent requests and traces one, and shows a failed one among the day’s failed workflows', async () => {
    const completion = await platform
      .openai(alice.key)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] });
    const listed = await waitFor('the request in visibility', async () => {
      const answer = await call(`/admin/api/requests?user_id=${alice.user_id}`, operator());
      return answer.body.requests.find(
        (request: Json) => request.request_id === completion.id && request.status === 'completed',
      );
    });
    expect(listed).toMatchObject({
      workflow_id: `completion-${completion.id}`,
      user_id: alice.user_id,
      model: 'gpt-4o-mini',
      temporal_url: expect.stringMatching(
        new RegExp(
          `^http://temporal-ui\\.example:8080/namespaces/default/workflows/completion-${completion.id}/[0-9a-f-]+/history$`,
        ),
      ),
    });
    const trace = await call(`/admin/api/requests/${completion.id}`, { cookie: boss.cookie });
    expect(trace.body.trace).toMatchObject({ id: completion.id, status: 'completed', user_id: alice.user_id });
    expect(trace.body.trace.attempts[0]).toMatchObject({ outcome: 'succeeded' });
    expect((await call('/admin/api/requests/chatcmpl-none', operator())).status).toBe(404);

    // A request the provider refuses (a 400 is not retried elsewhere): its workflow fails.
    await platform.simulator.addFault({ times: 1, fault: { status: 400 } });
    const refused = await platform
      .openai(bob.key)
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Fail me' }] })
      .then(
        () => ({ status: 200 }),
        (error: { status: number }) => error,
      );
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const failed = await waitFor('the failed workflow in visibility', async () => {
      const answer = await call('/admin/api/workflows/failed', { cookie: envAdmin.cookie });
      return answer.body.workflows.find(
        (workflow: Json) => workflow.user_id === bob.user_id && workflow.kind === 'completion',
      );
    });
    expect(failed).toMatchObject({
      type: 'chatCompletion',
      status: 'failed',
      failure: expect.stringMatching(/\S/),
      temporal_url: expect.stringMatching(/\/history$/),
    });
    const requests = (await call(`/admin/api/requests?user_id=${bob.user_id}`, operator())).body.requests as Json[];
    expect(requests.find((request) => request.workflow_id === failed.workflow_id)).toMatchObject({ status: 'failed' });
  });
});

describe('providers and the platform’s figures', () => {
  it('shows a provider’s breaker opened by its failures', async () => {
    const before = await call('/admin/api/providers', operator());
    expect(before.body.breaker).toEqual({ failure_threshold: 2, cooldown_ms: 30_000 });
    expect(before.body.providers.find((provider: Json) => provider.id === 'deepseek')).toMatchObject({
      enabled: true,
      health: 'healthy',
      circuit: { state: 'closed', consecutive_failures: 0 },
      models: expect.arrayContaining(['deepseek-chat']),
    });
    expect(before.body.media_engines.length).toBeGreaterThan(0);
    await platform.simulator.addFault({ match: { model: 'deepseek-chat' }, fault: { status: 503 } });
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        // The failover serves it from another provider of the tier.
        await platform
          .openai(alice.key)
          .chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'Hi' }] });
      }
    } finally {
      await platform.simulator.clearFaults();
    }
    const deepseek = await waitFor('the open breaker', async () => {
      const answer = await call('/admin/api/providers', { cookie: boss.cookie });
      const provider = answer.body.providers.find((candidate: Json) => candidate.id === 'deepseek');
      return provider.circuit.state === 'open' ? provider : null;
    });
    expect(deepseek).toMatchObject({
      health: 'down',
      circuit: { consecutive_failures: 2, opened_at: expect.any(String), last_error: expect.stringMatching(/503/) },
    });
  });

  it('gives the platform’s figures: turns, schedules, media jobs and webhook runs by status', async () => {
    const task = await call('/schedule/tasks', alice, {
      method: 'POST',
      body: JSON.stringify({ cron: '0 9 * * *', agent_id: 'general', message: 'Morning summary' }),
    });
    expect(task.status).toBe(201);
    const overview = await call('/admin/api/overview?days=1', { cookie: boss.cookie });
    expect(overview.status).toBe(200);
    expect(overview.body).toMatchObject({
      days: 1,
      totals: { turns: 2, failed_turns: 0 },
      schedules: { total: 1, active: 1, paused: 0, last_run_by_status: { never: 1 } },
      media_jobs: { by_status: {} },
      webhook_runs: { by_status: {} },
    });
  });
});
