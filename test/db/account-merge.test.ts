/**
 * The migration that merges accounts whose addresses differ only by case or surrounding spaces
 * (db/migrations/Migration20261127100000_one-account-per-address.ts): on a database migrated up to the migration
 * before it, three accounts of one person (and two others) with rows in every table that refers to an account; after
 * it, everything belongs to the oldest account, nothing else is lost, the database refuses an address that is not
 * normalised, and running the merge again changes nothing.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openOrm } from '../../db/orm.ts';
import { createDatabase, dropDatabase } from '../../db/databases.ts';
import { withDatabase } from '../helpers/databases.ts';

const migration = 'Migration20261127100000_one-account-per-address';
const adminUrl = process.env.TESSERA_TEST_DATABASE_URL!;
const name = `tessera_merge_${randomBytes(4).toString('hex')}`;
let orm: MikroORM;
let database: pg.Pool;
/** The migration applied just before this one. */
let previous: string;

beforeAll(async () => {
  await createDatabase(adminUrl, name);
  orm = await openOrm(withDatabase(adminUrl, name), { poolMax: 1 });
  database = new pg.Pool({ connectionString: withDatabase(adminUrl, name), max: 1 });
  const pending = (await orm.migrator.getPending()).map((entry) => entry.name);
  const index = pending.indexOf(migration);
  expect(index).toBeGreaterThan(0);
  previous = pending[index - 1]!;
  await orm.migrator.up({ to: previous });
});

afterAll(async () => {
  await database?.end();
  await orm?.close();
  await dropDatabase(adminUrl, name);
});

const query = async (text: string, values: unknown[] = []) => (await database.query(text, values)).rows;

/**
 * user_a (Alice@Example.com, the oldest), user_b (alice@example.com) and user_c (`ALICE@EXAMPLE.COM `) are one
 * person; user_d (Bob@Example.com) and user_e (carol@example.com) are not.
 */
async function seed(withHolds: boolean): Promise<void> {
  const hour = 3_600_000;
  const now = Date.now();
  await database.query(`
    insert into users (id, email, plan, credits_balance, credits_held, plan_cycle_start, custom_limits,
                       stripe_customer_id, stripe_subscription_id, created_at) values
      ('user_a', 'Alice@Example.com', 'business', 1000, 40, '2026-01-01', '{"per_hour": 7}', null, null, '2026-01-01'),
      ('user_b', 'alice@example.com', 'free', 300, 10, '2026-02-01', null, 'cus_b', 'sub_b', '2026-02-01'),
      ('user_c', 'ALICE@EXAMPLE.COM ', 'pro', 50, 0, '2026-03-01', '{"per_day": 1}', 'cus_c', 'sub_c', '2026-03-01'),
      ('user_d', 'Bob@Example.com', 'free', 5, 0, null, null, null, null, '2026-01-15'),
      ('user_e', 'carol@example.com', 'free', 6, 0, null, null, null, null, '2026-01-16');
    insert into api_keys (id, user_id, name, secret_hash, preview, created_at) values
      ('key_a', 'user_a', null, 'hash_a', 'te_a', now()), ('key_b', 'user_b', null, 'hash_b', 'te_b', now()),
      ('key_c', 'user_c', null, 'hash_c', 'te_c', now()), ('key_d', 'user_d', null, 'hash_d', 'te_d', now());
    insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, estimated, created_at) values
      ('grant:user_a', 'user_a', 'grant', 1000, null, null, false, now()),
      ('wf_a#1:reserve', 'user_a', 'reserve', 40, 'wf_a', 1, false, now()),
      ('grant:user_b', 'user_b', 'grant', 310, null, null, false, now()),
      ('wf_b#1:settle', 'user_b', 'settle', 10, 'wf_b', 1, false, now()),
      ('wf_b#2:reserve', 'user_b', 'reserve', 10, 'wf_b', 2, false, now()),
      ('grant:user_c', 'user_c', 'grant', 50, null, null, false, now()),
      ('grant:user_d', 'user_d', 'grant', 5, null, null, false, now());
    insert into web_sessions (id, token_hash, user_id, method, created_at, expires_at) values
      ('ws_b', 'ws_hash_b', 'user_b', 'magic_link', now(), now() + interval '1 day');
    insert into oauth_identities (id, user_id, provider, subject, email, scopes, created_at, updated_at) values
      ('oid_c', 'user_c', 'google', 'google-subject', 'alice@example.com', '[]', now(), now());
    insert into custom_agents (id, user_id, name, description, system_prompt, model, tools, routing, created_at,
                               updated_at) values
      ('agent_b', 'user_b', 'Mine', '', '', 'm', '[]', '{}', now(), now()),
      ('agent_c', 'user_c', 'Also mine', '', '', 'm', '[]', '{}', now(), now());
    insert into agent_model_choices (user_id, agent_id, model) values
      ('user_a', 'writer', 'model-a'), ('user_b', 'writer', 'model-b'), ('user_b', 'coder', 'model-b');
    insert into memories (id, user_id, content, content_hash, importance, source, created_at) values
      ('mem_a', 'user_a', 'Likes tea', 'tea', 0.2, 'user', now()),
      ('mem_b', 'user_b', 'likes tea', 'tea', 0.9, 'agent', now()),
      ('mem_b2', 'user_b', 'Lives in Lyon', 'lyon', 0.5, 'user', now());
    insert into media_jobs (id, kind, user_id, status, request, credits, created_at, updated_at) values
      ('video_c', 'video', 'user_c', 'completed', '{}', 3, now(), now());
    insert into media_callback_secrets (user_id, secret, created_at) values
      ('user_a', 'whsec_a', now()), ('user_b', 'whsec_b', now());
    insert into published_sites (subdomain, user_id, title, html, etag, created_at, updated_at) values
      ('alice', 'user_b', 'Alice', '<p>hi</p>', 'etag', now(), now());
    insert into schedule_tasks (id, user_id, agent_id, message, cron, timezone, enabled, created_at, updated_at) values
      ('tsk_b', 'user_b', 'writer', 'Daily note', '0 9 * * *', 'UTC', true, now(), now());
    insert into teams (id, name, created_by, created_at) values
      ('team_1', 'One', 'user_b', now()), ('team_2', 'Two', 'user_d', now());
    insert into team_members (team_id, user_id, role, joined_at) values
      ('team_1', 'user_a', 'member', now()), ('team_1', 'user_b', 'owner', now()),
      ('team_2', 'user_d', 'owner', now()), ('team_2', 'user_c', 'member', now());
    insert into team_invitations (id, team_id, email, role, token_hash, invited_by, created_at, expires_at,
                                  accepted_at, accepted_by) values
      ('tinv_1', 'team_2', 'alice@example.com', 'member', 'tinv_hash', 'user_d', now(), now(), now(), 'user_c'),
      ('tinv_2', 'team_1', 'dave@example.com', 'member', 'tinv_hash_2', 'user_b', now(), now(), null, null);
    insert into team_broadcasts (id, team_id, sender_id, message, status, created_at) values
      ('bc_1', 'team_1', 'user_b', 'Hello', 'done', now());
    insert into team_broadcast_deliveries (broadcast_id, user_id, status, channels) values
      ('bc_1', 'user_a', 'delivered', '[]'), ('bc_1', 'user_b', 'delivered', '[]');
    insert into chat_conversations (id, owner, turns, created_at, updated_at) values
      ('conv_a', 'user:user_a', 1, now(), now()), ('conv_b1', 'user:user_b', 2, now(), now()),
      ('conv_b2', 'user:user_b', 3, now(), now());
    insert into chat_sessions (id, owner, key, channel, conversation_id, created_at, updated_at) values
      ('ses_a', 'user:user_a', 'api:default', 'api', 'conv_a', now(), now()),
      ('ses_b1', 'user:user_b', 'api:default', 'api', 'conv_b1', now(), now()),
      ('ses_b2', 'user:user_b', 'web:notes', 'web', 'conv_b2', now(), now());
    insert into a2a_tasks (tenant, owner, id, context_id, status_last_updated) values
      ('', 'user_b', '00000000-0000-0000-0000-000000000001', 'context', 1);
    insert into a2a_push_configs (tenant, owner, task_id, config_id) values
      ('', 'user_b', '00000000-0000-0000-0000-000000000001', 'config');
    insert into rate_limits (key, points, expire) values
      ('rl:hour:user:user_a', 2, ${now + hour}), ('rl:hour:user:user_b', 3, ${now + 2 * hour}),
      ('rl:day:user:user_b', 4, ${now - hour}), ('rl:hour:link:user:user_c', 1, ${now + hour}),
      ('rl:hour:user:user_d', 9, ${now + hour});
    insert into stripe_events (id, type, created_at_stripe, processed_at) values
      ('plan-state:user_b', 'tessera.plan_state_watermark', 100, now());
  `);
  if (withHolds) {
    await database.query(`insert into credit_holds (key, user_id, workflow_id, attempt, amount, created_at) values
      ('wf_a#1:reserve', 'user_a', 'wf_a', 1, 40, now()), ('wf_b#2:reserve', 'user_b', 'wf_b', 2, 10, now())`);
  }
}

/** Every row the merge may touch, for comparing two states. */
async function snapshot(): Promise<Record<string, unknown[]>> {
  const tables = [
    'users',
    'api_keys',
    'credit_ledger',
    'web_sessions',
    'oauth_identities',
    'custom_agents',
    'agent_model_choices',
    'memories',
    'media_jobs',
    'media_callback_secrets',
    'published_sites',
    'schedule_tasks',
    'teams',
    'team_members',
    'team_invitations',
    'team_broadcasts',
    'team_broadcast_deliveries',
    'chat_conversations',
    'chat_sessions',
    'a2a_tasks',
    'a2a_push_configs',
    'rate_limits',
    'stripe_events',
  ];
  const state: Record<string, unknown[]> = {};
  for (const table of tables) {
    state[table] = await query(`select * from ${table} order by 1, 2`);
  }
  return state;
}

it('merges accounts that differ only by the case of their address into the oldest, losing nothing', async () => {
  const [holdsTable] = await query(`select to_regclass('credit_holds') is not null as present`);
  const withHolds = holdsTable!.present as boolean;
  await seed(withHolds);
  const ledgerBefore = await query('select key, kind, amount from credit_ledger order by key');

  expect((await orm.migrator.up({ to: migration })).map((entry) => entry.name)).toEqual([migration]);

  // The account row: the oldest survives with the group's credits, its highest plan, and a Stripe customer.
  expect(await query('select id, email from users order by id')).toEqual([
    { id: 'user_a', email: 'alice@example.com' },
    { id: 'user_d', email: 'bob@example.com' },
    { id: 'user_e', email: 'carol@example.com' },
  ]);
  const [alice] = await query('select * from users where id = $1', ['user_a']);
  expect(alice).toMatchObject({
    plan: 'business',
    credits_balance: 1350,
    credits_held: 50,
    plan_cycle_start: new Date('2026-01-01'),
    custom_limits: { per_hour: 7 },
    stripe_customer_id: 'cus_b',
    stripe_subscription_id: 'sub_b',
    created_at: new Date('2026-01-01'),
  });
  const [bob] = await query('select plan, credits_balance from users where id = $1', ['user_d']);
  expect(bob).toEqual({ plan: 'free', credits_balance: 5 });

  // The ledger: every entry kept and moved, plus one 0-credit entry per merged account; balances still add up.
  const ledger = await query('select key, user_id, kind, amount, note from credit_ledger order by key');
  expect(ledger.filter((entry) => !String(entry.key).startsWith('merge:'))).toEqual(
    ledgerBefore.map((entry) => ({
      ...entry,
      user_id: entry.key === 'grant:user_d' ? 'user_d' : 'user_a',
      note: null,
    })),
  );
  expect(ledger.filter((entry) => String(entry.key).startsWith('merge:'))).toEqual([
    {
      key: 'merge:user_b',
      user_id: 'user_a',
      kind: 'adjust',
      amount: 0,
      note: 'account user_b (alice@example.com) merged into this one',
    },
    {
      key: 'merge:user_c',
      user_id: 'user_a',
      kind: 'adjust',
      amount: 0,
      note: 'account user_c (ALICE@EXAMPLE.COM ) merged into this one; its Stripe customer cus_c was not kept',
    },
  ]);
  const [sums] = await query(`select
      sum(amount) filter (where kind in ('grant', 'purchase', 'adjust')) - sum(amount) filter (where kind = 'settle')
        as balance
    from credit_ledger where user_id = 'user_a'`);
  expect(Number(sums!.balance)).toBe(1350);
  if (withHolds) {
    expect(await query('select key, user_id, amount from credit_holds order by key')).toEqual([
      { key: 'wf_a#1:reserve', user_id: 'user_a', amount: 40 },
      { key: 'wf_b#2:reserve', user_id: 'user_a', amount: 10 },
    ]);
  }

  // Rows that simply belong to an account.
  const owners = async (table: string, column = 'user_id') =>
    (await query(`select ${column} as owner, count(*)::int as count from ${table} group by 1 order by 1`)).map(
      (row) => `${row.owner}:${row.count}`,
    );
  expect(await owners('api_keys')).toEqual(['user_a:3', 'user_d:1']);
  expect(await owners('web_sessions')).toEqual(['user_a:1']);
  expect(await owners('oauth_identities')).toEqual(['user_a:1']);
  expect(await owners('custom_agents')).toEqual(['user_a:2']);
  expect(await owners('media_jobs')).toEqual(['user_a:1']);
  expect(await owners('published_sites')).toEqual(['user_a:1']);
  expect(await owners('schedule_tasks')).toEqual(['user_a:1']);
  expect(await owners('teams', 'created_by')).toEqual(['user_a:1', 'user_d:1']);
  expect(await owners('team_broadcasts', 'sender_id')).toEqual(['user_a:1']);
  expect(await query('select id, invited_by, accepted_by from team_invitations order by id')).toEqual([
    { id: 'tinv_1', invited_by: 'user_d', accepted_by: 'user_a' },
    { id: 'tinv_2', invited_by: 'user_a', accepted_by: null },
  ]);
  expect(await owners('a2a_tasks', 'owner')).toEqual(['user_a:1']);
  expect(await owners('a2a_push_configs', 'owner')).toEqual(['user_a:1']);

  // Rows an account has once per key: one kept.
  expect(await query('select id, user_id, importance from memories order by id')).toEqual([
    { id: 'mem_b', user_id: 'user_a', importance: 0.9 },
    { id: 'mem_b2', user_id: 'user_a', importance: 0.5 },
  ]);
  expect(await query('select team_id, user_id, role from team_members order by team_id, user_id')).toEqual([
    { team_id: 'team_1', user_id: 'user_a', role: 'owner' },
    { team_id: 'team_2', user_id: 'user_a', role: 'member' },
    { team_id: 'team_2', user_id: 'user_d', role: 'owner' },
  ]);
  expect(await query('select user_id, agent_id, model from agent_model_choices order by agent_id')).toEqual([
    { user_id: 'user_a', agent_id: 'coder', model: 'model-b' },
    { user_id: 'user_a', agent_id: 'writer', model: 'model-a' },
  ]);
  expect(await query('select user_id, secret from media_callback_secrets')).toEqual([
    { user_id: 'user_a', secret: 'whsec_a' },
  ]);
  expect(await query('select broadcast_id, user_id from team_broadcast_deliveries')).toEqual([
    { broadcast_id: 'bc_1', user_id: 'user_a' },
  ]);

  // Conversations and sessions: every history kept; a session key the survivor already used gets a key of its own.
  expect(await query('select id, owner from chat_conversations order by id')).toEqual([
    { id: 'conv_a', owner: 'user:user_a' },
    { id: 'conv_b1', owner: 'user:user_a' },
    { id: 'conv_b2', owner: 'user:user_a' },
  ]);
  expect(await query('select id, owner, key, conversation_id from chat_sessions order by id')).toEqual([
    { id: 'ses_a', owner: 'user:user_a', key: 'api:default', conversation_id: 'conv_a' },
    { id: 'ses_b1', owner: 'user:user_a', key: 'api:default@user_b', conversation_id: 'conv_b1' },
    { id: 'ses_b2', owner: 'user:user_a', key: 'web:notes', conversation_id: 'conv_b2' },
  ]);

  // Rate-limit windows add up their live counts; Stripe's watermark moves.
  const limits = await query('select key, points from rate_limits order by key');
  expect(limits).toEqual([
    { key: 'rl:day:user:user_a', points: 0 },
    { key: 'rl:hour:link:user:user_a', points: 1 },
    { key: 'rl:hour:user:user_a', points: 5 },
    { key: 'rl:hour:user:user_d', points: 9 },
  ]);
  expect(await query('select id, created_at_stripe from stripe_events')).toEqual([
    { id: 'plan-state:user_a', created_at_stripe: '100' },
  ]);

  // The database now refuses a second spelling of an address, and an address that is not normalised.
  const insertUser = (id: string, email: string) =>
    database.query(`insert into users (id, email, created_at) values ($1, $2, now())`, [id, email]);
  await expect(insertUser('user_f', 'Alice@Example.com')).rejects.toMatchObject({
    code: '23514',
    constraint: 'users_email_normalised',
  });
  await expect(insertUser('user_f', 'alice@example.com')).rejects.toMatchObject({ code: '23505' });

  // Idempotent: undone (the check only) and run again, it finds nothing to merge and changes nothing.
  const merged = await snapshot();
  await orm.migrator.down({ to: previous });
  await orm.migrator.up({ to: migration });
  expect(await snapshot()).toEqual(merged);
});
