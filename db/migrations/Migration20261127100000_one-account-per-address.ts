import { Migration } from '@mikro-orm/migrations';
import { planNames } from '../../common/plans.ts';

/**
 * One account per address. Until now the gateway stored and looked up addresses as given while the agent service
 * lower-cased them, so `Alice@Example.com` (made by the operator's key) and `alice@example.com` (a magic link or a team
 * invitation) could be two accounts of one person. Every path now normalises (common/email.ts: trimmed,
 * lower-cased); this migration merges the accounts whose addresses differ only so, then makes the database refuse an
 * address that is not normalised (`users_email_normalised`, see db/entities/user.entity.ts).
 *
 * The merge, in this migration's transaction, with `users` locked so no account is made or found meanwhile:
 * - The oldest account of an address (`created_at`, then id) survives; every row of the others moves to it and the
 *   others are deleted. `lower(btrim(email))` is `normalizeEmail` in SQL for the addresses the platform accepts
 *   (every entry point validates them as ASCII addresses).
 * - The account row: balances and held credits are summed (their ledger entries and open holds move along, so the
 *   balance and the hold still equal the ledger's sums); the highest plan of the group is kept with its cycle start;
 *   custom limits and the Stripe customer and subscription are the survivor's, else the oldest other account's.
 *   A ledger entry of 0 credits (`merge:<merged id>`, kind `adjust`) records each merge, and names a Stripe customer
 *   that could not be kept because the survivor had one (its subscription must then be ended in Stripe).
 * - Rows that can exist once per account keep one: a memory per content (the higher importance), a team membership
 *   (the higher role), a model choice per agent, a media callback secret and a broadcast delivery (the survivor's).
 * - Chat sessions and conversations are owned by `user:<id>`; a merged account's session whose key the surviving
 *   account uses already keeps its history under the key `<key>@<merged id>`.
 * - Rate-limit windows (`rl:<window>:…user:<id>`) add up their counts; the plan-state watermark of Stripe events
 *   (`plan-state:<id>`) keeps the newest.
 * - Temporal is not changed: a scheduled task's Temporal Schedule carries only the task id in its action (the run reads
 *   the owner from `schedule_tasks` when it fires), so it runs for the survivor; its memo and search attribute keep the
 *   merged id as a label. Completions of the merged account stay in Temporal under that id (their traces are not
 *   found by the survivor's keys; their charges are in the survivor's ledger). Run it with the platform stopped:
 *   work in flight for a merged account at that moment settles against an id that no longer exists.
 *
 * Idempotent: with no two accounts sharing a normalised address it changes nothing. It cannot be undone (`down` only
 * drops the check).
 */
export class Migration20261127100000_one_account_per_address extends Migration {
  override name = 'Migration20261127100000_one_account_per_address';

  override async up(): Promise<void> {
    // Read now (inside this migration's transaction): the open-holds table comes with a migration of the same days.
    const [holds] = await this.execute(`select to_regclass('credit_holds') is not null as present`);

    this.addSql(`lock table "users" in access exclusive mode;`);
    // Every account whose address another one shares once normalised, with the account it merges into (itself for
    // the survivor).
    this.addSql(`drop table if exists pg_temp.account_merges;`);
    this.addSql(
      `create temporary table account_merges on commit drop as
       select id as user_id, email, created_at,
              first_value(id) over (partition by lower(btrim(email)) order by created_at, id) as survivor_id
       from users
       where email is not null and lower(btrim(email)) in (
         select lower(btrim(email)) from users where email is not null group by 1 having count(*) > 1);`,
    );
    // What the surviving row will hold: computed before anything moves.
    const rank = `array_position(array[${planNames.map((plan) => `'${plan}'`).join(', ')}]::text[], u.plan::text)`;
    const survivorFirst = `(u.id = g.survivor_id) desc, u.created_at, u.id`;
    this.addSql(`drop table if exists pg_temp.account_totals;`);
    this.addSql(
      `create temporary table account_totals on commit drop as
       select g.survivor_id,
              sum(u.credits_balance)::int as credits_balance,
              sum(u.credits_held)::int as credits_held,
              (array_agg(u.plan order by ${rank} desc nulls last, ${survivorFirst}))[1] as plan,
              (array_agg(u.plan_cycle_start order by ${rank} desc nulls last, ${survivorFirst}))[1] as plan_cycle_start,
              (array_agg(u.custom_limits order by ${survivorFirst}) filter (where u.custom_limits is not null))[1]
                as custom_limits,
              (array_agg(u.stripe_customer_id order by ${survivorFirst})
                filter (where u.stripe_customer_id is not null))[1] as stripe_customer_id,
              (array_agg(u.stripe_subscription_id order by ${survivorFirst})
                filter (where u.stripe_customer_id is not null))[1] as stripe_subscription_id
       from account_merges g join users u on u.id = g.user_id
       group by g.survivor_id;`,
    );
    this.addSql(
      `insert into credit_ledger (key, user_id, kind, amount, estimated, note, created_at)
       select 'merge:' || g.user_id, g.survivor_id, 'adjust', 0, false,
              left('account ' || g.user_id || ' (' || g.email || ') merged into this one'
                   || case when u.stripe_customer_id is distinct from t.stripe_customer_id
                                and u.stripe_customer_id is not null
                           then '; its Stripe customer ' || u.stripe_customer_id || ' was not kept' else '' end, 255),
              now()
       from account_merges g join users u on u.id = g.user_id join account_totals t on t.survivor_id = g.survivor_id
       where g.user_id <> g.survivor_id
       on conflict (key) do nothing;`,
    );

    // Rows an account may have once per key: keep one of the group's (the first in `order`), delete the others.
    const keepOne = (table: string, column: string, key: string[], order: string) =>
      this.addSql(
        `delete from "${table}" where ctid in (
           select ranked.ctid from (
             select x.ctid, row_number() over (
                      partition by ${['g.survivor_id', ...key.map((name) => `x.${name}`)].join(', ')}
                      order by ${order}) as position
             from "${table}" x join account_merges g on g.user_id = x.${column}) ranked
           where ranked.position > 1);`,
      );
    const survivorRowFirst = `(g.user_id = g.survivor_id) desc, g.created_at, g.user_id`;
    keepOne('memories', 'user_id', ['content_hash'], `x.importance desc, ${survivorRowFirst}, x.created_at, x.id`);
    keepOne('team_members', 'user_id', ['team_id'], `(x.role = 'owner') desc, ${survivorRowFirst}`);
    keepOne('agent_model_choices', 'user_id', ['agent_id'], survivorRowFirst);
    keepOne('media_callback_secrets', 'user_id', [], survivorRowFirst);
    keepOne('team_broadcast_deliveries', 'user_id', ['broadcast_id'], survivorRowFirst);

    const moves: Array<[string, string]> = [
      ['api_keys', 'user_id'],
      ['credit_ledger', 'user_id'],
      ...(holds?.present ? ([['credit_holds', 'user_id']] as Array<[string, string]>) : []),
      ['web_sessions', 'user_id'],
      ['oauth_identities', 'user_id'],
      ['custom_agents', 'user_id'],
      ['agent_model_choices', 'user_id'],
      ['memories', 'user_id'],
      ['media_jobs', 'user_id'],
      ['media_callback_secrets', 'user_id'],
      ['published_sites', 'user_id'],
      ['schedule_tasks', 'user_id'],
      ['teams', 'created_by'],
      ['team_members', 'user_id'],
      ['team_invitations', 'invited_by'],
      ['team_invitations', 'accepted_by'],
      ['team_broadcasts', 'sender_id'],
      ['team_broadcast_deliveries', 'user_id'],
      // The A2A stores scope tasks by the caller's user id (migration `a2a`).
      ['a2a_tasks', 'owner'],
      ['a2a_push_configs', 'owner'],
    ];
    for (const [table, column] of moves) {
      this.addSql(
        `update "${table}" x set "${column}" = g.survivor_id from account_merges g
         where x."${column}" = g.user_id and g.user_id <> g.survivor_id;`,
      );
    }

    // A session key is unique per owner: a merged account's session whose key another account of the group holds
    // keeps its history under a key of its own.
    this.addSql(
      `update chat_sessions s set key = left(s.key, 127 - length(g.user_id)) || '@' || g.user_id
       from account_merges g
       where g.user_id <> g.survivor_id and s.owner = 'user:' || g.user_id
         and exists (select 1 from chat_sessions o join account_merges og on o.owner = 'user:' || og.user_id
                     where og.survivor_id = g.survivor_id and o.key = s.key and o.id <> s.id);`,
    );
    for (const table of ['chat_sessions', 'chat_conversations']) {
      this.addSql(
        `update "${table}" x set owner = 'user:' || g.survivor_id from account_merges g
         where x.owner = 'user:' || g.user_id and g.user_id <> g.survivor_id;`,
      );
    }

    // Rate-limit windows (api/rate-limit.ts: `rl:<window>:user:<id>`, `rl:<window>:link:user:<id>`): a live window's
    // count carries over into the survivor's, the later reset wins (stricter, never looser).
    const nowMs = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
    this.addSql(
      `with moved as (
         delete from rate_limits r using account_merges g
         where g.user_id <> g.survivor_id and r.key like 'rl:%'
           and right(r.key, length(g.user_id) + 6) = ':user:' || g.user_id
         returning left(r.key, length(r.key) - length(g.user_id)) || g.survivor_id as key, r.points, r.expire
       )
       insert into rate_limits (key, points, expire)
       select key, coalesce(sum(points) filter (where expire > ${nowMs}), 0), max(expire) from moved group by key
       on conflict (key) do update set
         points = case when rate_limits.expire > ${nowMs} then rate_limits.points else 0 end + excluded.points,
         expire = greatest(rate_limits.expire, excluded.expire);`,
    );
    // Stripe's plan-state watermark (api/services/billing/service.ts): the newest event applied to any of the
    // accounts; later events are newer than it anyway.
    this.addSql(
      `with moved as (
         delete from stripe_events e using account_merges g
         where g.user_id <> g.survivor_id and e.id = 'plan-state:' || g.user_id
         returning g.survivor_id, e.type, e.created_at_stripe, e.processed_at
       )
       insert into stripe_events (id, type, created_at_stripe, processed_at)
       select 'plan-state:' || survivor_id, min(type), max(created_at_stripe), max(processed_at)
       from moved group by survivor_id
       on conflict (id) do update set created_at_stripe =
         greatest(stripe_events.created_at_stripe, excluded.created_at_stripe);`,
    );

    // Nothing refers to the merged accounts any more.
    this.addSql(`delete from users u using account_merges g where u.id = g.user_id and g.user_id <> g.survivor_id;`);
    this.addSql(
      `update users u set credits_balance = t.credits_balance, credits_held = t.credits_held, plan = t.plan,
              plan_cycle_start = t.plan_cycle_start, custom_limits = t.custom_limits,
              stripe_customer_id = t.stripe_customer_id, stripe_subscription_id = t.stripe_subscription_id
       from account_totals t where u.id = t.survivor_id;`,
    );
    this.addSql(`update users set email = lower(btrim(email)) where email <> lower(btrim(email));`);
    this.addSql(`alter table "users" drop constraint if exists "users_email_normalised";`);
    this.addSql(`alter table "users" add constraint "users_email_normalised" check (email = lower(btrim(email)));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "users" drop constraint if exists "users_email_normalised";`);
  }
}
