/** Plans, credits and accounts through the public API; the ledger read back from PostgreSQL. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let database: pg.Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
});

afterEach(async () => {
  await platform.simulator.clearFaults();
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const messages = [{ role: 'user' as const, content: 'Count my credits' }];

/** The account as the ledger says it should be, and as the account row says it is. */
async function reconcile(userId: string) {
  const { rows } = await database.query<{
    credited: string;
    settled: string;
    held: string;
    balance: number;
    account_held: number;
  }>(
    `select
       (select coalesce(sum(amount), 0) from credit_ledger where user_id = $1 and kind in ('grant', 'purchase', 'adjust')) as credited,
       (select coalesce(sum(amount), 0) from credit_ledger where user_id = $1 and kind = 'settle') as settled,
       (select coalesce(sum(r.amount), 0) from credit_ledger r where r.user_id = $1 and r.kind = 'reserve'
          and not exists (select 1 from credit_ledger x where x.key in (replace(r.key, ':reserve', ':settle'), replace(r.key, ':reserve', ':release')))) as held,
       u.credits_balance as balance, u.credits_held as account_held
     from users u where u.id = $1`,
    [userId],
  );
  const row = rows[0]!;
  return {
    ledgerBalance: Number(row.credited) - Number(row.settled),
    ledgerHeld: Number(row.held),
    balance: row.balance,
    held: row.account_held,
  };
}

async function waitForHoldsToClear(userId: string) {
  for (let poll = 0; poll < 100; poll++) {
    const state = await reconcile(userId);
    if (state.held === 0) return state;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return reconcile(userId);
}

describe('plans', () => {
  it('refuses a model outside the plan, naming the plan that unlocks it, with no upstream call', async () => {
    const { key } = await platform.createKey(undefined, 'free');
    await platform.simulator.resetRequests();
    const error = await platform
      .openai(key)
      .chat.completions.create({ model: 'gpt-4o', messages })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: 'permission_denied',
      required_plan: 'starter',
      message: expect.stringContaining('starter'),
    });
    expect((await platform.simulator.requests()).total).toBe(0);
  });

  it('never fails over to a model outside the plan', async () => {
    const { key } = await platform.createKey(undefined, 'free');
    await platform.simulator.addFault({ match: { model: 'gpt-4o-mini-2024-07-18' }, fault: { status: 503 } });
    const completion = await platform.openai(key).chat.completions.create({ model: 'gpt-4o-mini', messages });
    // The fast tier has five models; the free plan allows two of them.
    expect(completion.model).toBe('gemini-2.5-flash');
  });

  it('auto stays within the plan', async () => {
    const { key } = await platform.createKey(undefined, 'free');
    const completion = await platform.openai(key).chat.completions.create({ model: 'auto', messages });
    expect(['gpt-4o-mini', 'gemini-2.5-flash']).toContain(completion.model);
  });
});

describe('credits', () => {
  it('lets at most 10 of 50 concurrent requests through on a balance that covers 10, and reconciles', async () => {
    const owner = await platform.createKey(undefined, 'free');
    // The free grant is 100; an operator adjustment leaves 10. Each request below holds (and costs) 1 credit.
    await database.query(
      `insert into credit_ledger (key, user_id, kind, amount, created_at) values ($1, $2, 'adjust', -90, now())`,
      [`adjust:${owner.user_id}:test`, owner.user_id],
    );
    await database.query('update users set credits_balance = credits_balance - 90 where id = $1', [owner.user_id]);
    await platform.simulator.resetRequests();
    const client = platform.openai(owner.key);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        client.chat.completions.create({ model: 'gpt-4o-mini', messages, max_tokens: 50 }),
      ),
    );
    const served = results.filter((result) => result.status === 'fulfilled').length;
    const refused = results.filter(
      (result) =>
        result.status === 'rejected' && (result.reason as InstanceType<typeof OpenAI.APIError>).status === 402,
    ).length;
    expect(served).toBeGreaterThan(0);
    expect(served).toBeLessThanOrEqual(10);
    expect(served + refused).toBe(50);
    expect((await platform.simulator.requests()).total).toBe(served);

    const state = await waitForHoldsToClear(owner.user_id);
    expect(state).toEqual({ ledgerBalance: state.balance, ledgerHeld: 0, balance: 10 - served, held: 0 });
    const error = results.find((result) => result.status === 'rejected') as PromiseRejectedResult | undefined;
    if (error)
      expect((error.reason as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
        type: 'insufficient_credits',
      });
  });

  it('bills a stream without provider usage by estimate, marked in the ledger', async () => {
    const owner = await platform.createKey();
    await platform.simulator.addFault({ match: { model: 'claude-haiku-4-5-20251001' }, fault: { no_usage: true } });
    let id = '';
    for await (const chunk of await platform
      .openai(owner.key)
      .chat.completions.create({ model: 'claude-haiku-4-5', messages, stream: true })) {
      id = chunk.id;
    }
    await waitForHoldsToClear(owner.user_id);
    const { rows } = await database.query(
      'select model, amount, prompt_tokens, completion_tokens, estimated from credit_ledger where key = $1',
      [`completion-${id}#1:settle`],
    );
    expect(rows[0]).toMatchObject({ model: 'claude-haiku-4-5', estimated: true });
    expect(rows[0].completion_tokens).toBeGreaterThan(0);
    expect(rows[0].amount).toBeGreaterThanOrEqual(1);
  });

  it('bills a failover at the serving model’s rate, and releases the failed attempt’s hold', async () => {
    const owner = await platform.createKey();
    await platform.simulator.addFault({ match: { model: 'gpt-4o-2024-11-20' }, fault: { status: 500 } });
    const completion = await platform.openai(owner.key).chat.completions.create({ model: 'gpt-4o', messages });
    expect(completion.model).not.toBe('gpt-4o');
    await waitForHoldsToClear(owner.user_id);
    const { rows } = await database.query<{ key: string; kind: string; model: string; amount: number }>(
      'select key, kind, model, amount from credit_ledger where workflow_id = $1 order by id',
      [`completion-${completion.id}`],
    );
    expect(rows.map((row) => row.kind)).toEqual(['reserve', 'release', 'reserve', 'settle']);
    const settle = rows.find((row) => row.kind === 'settle')!;
    expect(settle.model).toBe(completion.model);
    const plans = (await (await platform.fetch('/api/v1/plans')).json()) as { credit_rates: Record<string, number> };
    const expected = Math.max(
      1,
      Math.ceil((completion.usage!.total_tokens * plans.credit_rates[completion.model]!) / 1000),
    );
    expect(settle.amount).toBe(expected);
  });
});

describe('accounts and usage', () => {
  it('lets the operator move an account to business with custom limits, and nobody else', async () => {
    const owner = await platform.createKey(undefined, 'free');
    const update = {
      plan: 'business',
      custom_limits: { per_hour: 5000, per_day: null, models: ['gpt-4o', 'gpt-4o-mini'] },
    };
    const refused = await platform.fetch(`/api/v1/account/${owner.user_id}`, {
      method: 'PATCH',
      key: owner.key,
      body: JSON.stringify(update),
    });
    expect(refused.status).toBe(403);
    const invalid = await platform.fetch(`/api/v1/account/${owner.user_id}`, {
      method: 'PATCH',
      key: platform.masterKey,
      body: JSON.stringify({ plan: 'gold' }),
    });
    expect(invalid.status).toBe(400);
    const response = await platform.fetch(`/api/v1/account/${owner.user_id}`, {
      method: 'PATCH',
      key: platform.masterKey,
      body: JSON.stringify(update),
    });
    expect(await response.json()).toMatchObject({ plan: 'business', allowed_models: ['gpt-4o', 'gpt-4o-mini'] });
    // The custom model list replaces the plan's: gpt-4o now serves, claude does not.
    const client = platform.openai(owner.key);
    expect((await client.chat.completions.create({ model: 'gpt-4o', messages })).model).toBe('gpt-4o');
    const error = await client.chat.completions
      .create({ model: 'claude-haiku-4-5', messages })
      .catch((caught: unknown) => caught);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    const limited = await platform.fetch('/api/v1/apikeys', { key: owner.key });
    expect(limited.headers.get('x-ratelimit-limit-hour')).toBe('5000');
  });

  it('shows a user their account, me and usage by model, and refuses another user’s', async () => {
    const owner = await platform.createKey(undefined, 'starter');
    const stranger = await platform.createKey(undefined, 'starter');
    await platform.openai(owner.key).chat.completions.create({ model: 'gpt-4o-mini', messages });
    await waitForHoldsToClear(owner.user_id);

    const account = (await (
      await platform.fetch(`/api/v1/account/${owner.user_id}`, { key: owner.key })
    ).json()) as Record<string, unknown>;
    // Reached through the API only so far: it has a key and no web login or linked chat.
    expect(account).toMatchObject({ user_id: owner.user_id, plan: 'starter', channels: ['api'] });
    expect(account.allowed_models).toEqual(
      expect.arrayContaining(['gpt-4o', 'claude-sonnet-4-6', 'gpt-4o-mini', 'gemini-2.5-flash']),
    );
    expect(account.allowed_models).not.toContain('claude-opus-4-5');
    expect((account.credits_remaining as number) + (account.credits_used as number)).toBe(50_000);

    const me = (await (await platform.fetch('/api/v1/auth/me', { key: owner.key })).json()) as Record<string, unknown>;
    expect(me).toMatchObject({
      user_id: owner.user_id,
      plan: 'starter',
      email: expect.stringContaining('@'),
      created_at: expect.any(String),
    });

    const usage = (await (await platform.fetch('/api/v1/usage?group_by=model', { key: owner.key })).json()) as {
      credits_used: number;
      credits_remaining: number;
      by_model: Array<{ model: string; requests: number }>;
    };
    expect(usage.credits_used).toBeGreaterThan(0);
    expect(usage.by_model).toEqual([expect.objectContaining({ model: 'gpt-4o-mini', requests: 1 })]);
    const empty = (await (
      await platform.fetch(
        `/api/v1/usage?from=${encodeURIComponent('2020-01-01T00:00:00Z')}&to=${encodeURIComponent('2020-02-01T00:00:00Z')}`,
        { key: owner.key },
      )
    ).json()) as { credits_used: number };
    expect(empty.credits_used).toBe(0);

    expect((await platform.fetch(`/api/v1/account/${owner.user_id}`, { key: stranger.key })).status).toBe(403);
    expect(
      (await platform.fetch('/api/v1/usage', { key: stranger.key, headers: { 'X-User-Id': owner.user_id } })).status,
    ).toBe(403);
    const asOperator = await platform.fetch('/api/v1/usage', {
      key: platform.masterKey,
      headers: { 'X-User-Id': owner.user_id },
    });
    expect(((await asOperator.json()) as { credits_used: number }).credits_used).toBe(usage.credits_used);
    expect((await platform.fetch('/api/v1/usage?from=yesterday', { key: owner.key })).status).toBe(400);
  });
});
