/**
 * The dashboard's usage figures kept by triggers (db/entities/usage-triggers.ts, migration `usage-rollups`), on a
 * migrated database, written to with SQL the way the platform's writers write: after every kind of change (turns
 * accepted and finished or failed, messages appended, an agent named after the settlement, a settlement before its
 * turn, a link moving a chat's rows and owner, a guest's conversation passing to an account, a session deleted, a
 * conversation deleted before its messages, messages written before their conversation, an account's ledger moved to
 * another), the figures (days rows plus changes) equal the counts recomputed from the rows, each owner's and the
 * platform's (its `*` rows, kept by the fold, plus every change), and folding (api/services/dashboard/usage-fold.ts)
 * changes none of them, even with a writer's transaction open across the fold.
 * The dashboard's answer is checked against the statements it used to run over the rows.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { foldUsage } from '../../api/services/dashboard/usage-fold.ts';
import { DashboardService } from '../../api/services/dashboard/service.ts';
import type { Principal } from '../../api/services/apikeys/service.ts';
import { cloneTestDatabase } from '../helpers/databases.ts';

let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;

beforeAll(async () => {
  database = await cloneTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  await pool.query(`insert into users (id, email, created_at) values
    ('u1', 'u1@example.com', now()), ('u2', 'u2@example.com', now()), ('u3', 'u3@example.com', now())`);
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

const sql = async (text: string, values: unknown[] = []) => (await pool.query(text, values)).rows;

/** Each figure by its key, from the rows (what the triggers must amount to). */
const fromRows = {
  messages: `select coalesce(c.owner, '') as subject, (m.created_at at time zone 'UTC')::date::text as day,
                    m.tool_name as dimension, count(*)::int as a, 0 as b
             from chat_messages m left join chat_conversations c on c.id = m.conversation_id group by 1, 2, 3`,
  turns: `select coalesce(c.owner, '') as subject, (t.created_at at time zone 'UTC')::date::text as day,
                 t.agent_id as dimension, count(*)::int as a, (count(*) filter (where t.status = 'failed'))::int as b
          from chat_turns t left join chat_conversations c on c.id = t.conversation_id group by 1, 2, 3`,
  credits: `select l.user_id as subject, (l.created_at at time zone 'UTC')::date::text as day, t.agent_id as dimension,
                   count(*)::int as a, sum(l.amount)::int as b
            from credit_ledger l left join chat_turns t on l.workflow_id like 'chat-%' and t.id = l.workflow_id
            where l.kind = 'settle' group by 1, 2, 3`,
};

/**
 * Each figure by its key, from the days rows and the changes not folded yet: every subject's (`platform` false), or
 * the platform's as the dashboard reads it (its `*` rows and every change), under the subject `*`.
 */
const fromUsage = (figure: 'messages' | 'turns' | 'credits', platform: boolean) => {
  const { table, subject, dimension, a, b } = {
    messages: { table: 'usage_message', subject: 'owner', dimension: 'tool_name', a: 'messages', b: '0' },
    turns: { table: 'usage_turn', subject: 'owner', dimension: 'agent_id', a: 'turns', b: 'failed' },
    credits: { table: 'usage_credit', subject: 'user_id', dimension: 'agent_id', a: 'settlements', b: 'credits' },
  }[figure];
  const rows = platform
    ? `select '*' as subject, day, ${dimension}, ${a} as a, ${b} as b from ${table}_days where ${subject} = '*'
       union all select '*', day, ${dimension}, ${a}, ${b} from ${table}_changes`
    : `select ${subject}, day, ${dimension}, ${a}, ${b} from ${table}_days where ${subject} <> '*'
       union all select ${subject}, day, ${dimension}, ${a}, ${b} from ${table}_changes`;
  return `select subject, day::text as day, ${dimension} as dimension, sum(a)::int as a, sum(b)::int as b
          from (${rows}) as u (subject, day, ${dimension}, a, b)
          group by 1, 2, 3 having sum(a) <> 0 or sum(b) <> 0`;
};

/** The same counts from the rows, for the whole platform (subject `*`). */
const platformFromRows = (figure: 'messages' | 'turns' | 'credits') =>
  `select '*' as subject, day, dimension, sum(a)::int as a, sum(b)::int as b from (${fromRows[figure]}) r
   group by 2, 3 having sum(a) <> 0 or sum(b) <> 0`;

type Row = { subject: string; day: string; dimension: string | null; a: number; b: number };
const sorted = (rows: Row[]) =>
  [...rows].sort((x, y) =>
    `${x.subject}|${x.day}|${x.dimension ?? '\0'}`.localeCompare(`${y.subject}|${y.day}|${y.dimension ?? '\0'}`),
  );

/** Every figure equals its count from the rows: each owner's or user's, and the platform's. */
async function expectExact(): Promise<void> {
  for (const figure of ['messages', 'turns', 'credits'] as const) {
    const expected = sorted((await sql(fromRows[figure])) as Row[]);
    const actual = sorted((await sql(fromUsage(figure, false))) as Row[]);
    expect({ figure, rows: actual }).toEqual({ figure, rows: expected });
    const platform = sorted((await sql(fromUsage(figure, true))) as Row[]);
    expect({ figure, platform }).toEqual({ figure, platform: sorted((await sql(platformFromRows(figure))) as Row[]) });
  }
}

/** Rows compared as a set (ties are ranked by the service's own order). */
const unordered = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).sort();

const day = (daysAgo: number) => `now() - interval '${daysAgo} days'`;

/** A turn with its messages as the conversation store writes them (question, optional tool call and result, answer). */
async function turn(
  conversation: string,
  number: number,
  options: { agent?: string | null; status?: string; tool?: string; daysAgo?: number; session?: string } = {},
) {
  const when = day(options.daysAgo ?? 0);
  const id = `chat-${conversation}-${number}`;
  await sql(
    `insert into chat_turns (id, conversation_id, number, status, created_at, agent_id, path)
     values ($1, $2, $3, $4, ${when}, $5, int4multirange(int4range(1, $3::int + 1)))`,
    [id, conversation, number, options.status ?? 'running', options.agent ?? null],
  );
  const messages: Array<[string, string | null]> = [['user', null]];
  if (options.tool) messages.push(['assistant', null], ['tool', options.tool]);
  messages.push(['assistant', null]);
  await sql(
    `insert into chat_messages (conversation_id, session_id, turn, seq, role, content, tool_name, channel, created_at)
     select $1, $2, $3, m.ordinality - 1, m.role, 'text', m.tool_name, 'web', ${when}
     from unnest($4::text[], $5::text[]) with ordinality as m(role, tool_name)`,
    [
      conversation,
      options.session ?? `ses_${conversation}`,
      number,
      messages.map(([role]) => role),
      messages.map(([, tool]) => tool),
    ],
  );
  return id;
}

async function settle(user: string, key: string, amount: number, workflowId: string | null, daysAgo = 0) {
  await sql(
    `insert into credit_ledger (key, user_id, kind, amount, workflow_id, estimated, created_at)
     values ($1, $2, 'settle', $3, $4, false, ${day(daysAgo)})`,
    [key, user, amount, workflowId],
  );
}

async function conversation(id: string, owner: string) {
  await sql(
    `insert into chat_conversations (id, owner, turns, created_at, updated_at) values ($1, $2, 0, now(), now())`,
    [id, owner],
  );
}

describe('usage figures kept by triggers', () => {
  it('count turns, messages and settlements as they are written and finished', async () => {
    await conversation('ca', 'user:u1');
    await conversation('cb', 'guest');
    await conversation('cc', 'telegram:42');
    const a1 = await turn('ca', 1, { agent: 'general', tool: 'calculator' });
    const a2 = await turn('ca', 2, { agent: 'coder', daysAgo: 3 });
    const a3 = await turn('ca', 3, { daysAgo: 40 });
    await turn('cb', 1, { tool: 'web_search' });
    await turn('cc', 1, { agent: 'general', daysAgo: 1 });
    await settle('u1', 'k1', 5, a1);
    await settle('u1', 'k2', 0, a2, 3);
    await settle('u1', 'k3', 7, 'completion-x');
    await sql(
      `insert into credit_ledger (key, user_id, kind, amount, workflow_id, estimated, created_at)
               values ('k4', 'u1', 'reserve', 9, $1, false, now())`,
      [a1],
    );
    await expectExact();
    // Finished: done (nothing moves), failed (counts as failed), and the routed agent named after its settlement.
    await sql(`update chat_turns set status = 'done', finished_at = now() where id = $1`, [a1]);
    await sql(`update chat_turns set status = 'failed', finished_at = now() where id = $1`, [a2]);
    await settle('u1', 'k5', 3, a3, 40);
    await sql(`update chat_turns set agent_id = 'writer' where id = $1`, [a3]);
    // A settlement before its turn's row.
    await settle('u2', 'k6', 4, 'chat-cd-1');
    await conversation('cd', 'user:u2');
    await turn('cd', 1, { agent: 'translator' });
    await expectExact();
  });

  it('move a linked chat’s rows and a guest’s conversation to the account that owns them now', async () => {
    // linkConversations: the joining conversation's messages and turns move to the target, which takes the owner.
    await sql(`update chat_messages set conversation_id = 'ca', turn = turn + 3 where conversation_id = 'cc'`);
    await sql(`update chat_turns set conversation_id = 'ca', number = number + 3 where conversation_id = 'cc'`);
    await sql(`update chat_conversations set owner = 'user:u1', turns = turns + 1 where id = 'ca'`);
    await sql(`delete from chat_conversations where id = 'cc'`);
    await expectExact();
    // A guest's conversation linked to an account.
    await sql(`update chat_conversations set owner = 'user:u1' where id = 'cb'`);
    await expectExact();
    const [owned] = await sql(
      `select sum(messages)::int as messages from (select * from usage_message_days union all
       select * from usage_message_changes) u where owner = 'user:u1'`,
    );
    // Its own 8, the Telegram chat's 2 and the guest's 4.
    expect(owned.messages).toBe(14);
  });

  it('forget what is deleted, in whatever order, and count rows written before their conversation', async () => {
    // deleteSession: a session's messages, then (its conversation's last) the turns and the conversation.
    await sql(`delete from chat_messages where session_id = 'ses_cc'`);
    await expectExact();
    await sql(`delete from chat_messages where conversation_id = 'cd'`);
    await sql(`delete from chat_turns where conversation_id = 'cd'`);
    await sql(`delete from chat_conversations where id = 'cd'`);
    await expectExact();
    // A conversation deleted before its rows, and rows written before their conversation.
    await sql(`delete from chat_conversations where id = 'cb'`);
    await expectExact();
    await sql(`delete from chat_messages where conversation_id = 'cb'`);
    await turn('ce', 1, { agent: 'general' });
    await expectExact();
    await conversation('ce', 'user:u3');
    await expectExact();
  });

  it('follow ledger entries moved to another account', async () => {
    await sql(`update credit_ledger set user_id = 'u3' where user_id = 'u2'`);
    await sql(`update credit_ledger set kind = 'adjust' where key = 'k3'`);
    await expectExact();
  });

  it('read the same after a fold, with a writer’s transaction open across it', async () => {
    const writer = await pool.connect();
    try {
      await writer.query('begin');
      await writer.query(`insert into chat_messages (conversation_id, session_id, turn, seq, role, content, channel,
                            created_at) values ('ca', 'ses_ca', 99, 0, 'user', 'late', 'web', now())`);
      expect(await foldUsage(pool)).toBeGreaterThan(0);
      await writer.query('commit');
    } finally {
      writer.release();
    }
    await expectExact();
    const [left] = await sql(`select count(*)::int as n from usage_message_changes`);
    expect(left.n).toBe(1);
    await foldUsage(pool);
    await expectExact();
    for (const table of ['usage_message_changes', 'usage_turn_changes', 'usage_credit_changes']) {
      expect((await sql(`select count(*)::int as n from ${table}`))[0].n).toBe(0);
    }
    // Below the threshold nothing is folded (no write transaction on a quiet platform).
    await turn('ca', 100, { agent: 'general' });
    expect(await foldUsage(pool, 1000)).toBe(0);
    expect((await sql(`select count(*)::int as n from usage_turn_changes`))[0].n).toBe(1);
    await expectExact();
  });

  it('answer the dashboard as the statements over the rows did', async () => {
    const since = new Date(
      Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() - 29),
    );
    const service = new DashboardService({ pool });
    const principal = (userId: string, operator = false) =>
      ({ userId, keyId: null, operator, plan: 'free', customLimits: null }) as Principal;
    for (const [who, scope] of [
      [principal('u1'), 'user'],
      [principal('u3'), 'user'],
      [principal('operator', true), 'platform'],
    ] as const) {
      const answer = await service.dashboard(who, 30);
      const owner = scope === 'user' ? `c.owner = 'user:${who.userId}' and` : '';
      const messages = await sql(
        `select (m.created_at at time zone 'UTC')::date::text as day, count(*)::int as messages
         from chat_messages m left join chat_conversations c on c.id = m.conversation_id
         where ${owner} m.created_at >= $1 group by 1 order by 1`,
        [since],
      );
      const tools = await sql(
        `select m.tool_name as tool, count(*)::int as calls
         from chat_messages m left join chat_conversations c on c.id = m.conversation_id
         where ${owner} m.created_at >= $1 and m.tool_name is not null group by 1 order by 2 desc, 1`,
        [since],
      );
      const turns = await sql(
        `select (t.created_at at time zone 'UTC')::date::text as day, count(*)::int as turns,
                (count(*) filter (where t.status = 'failed'))::int as failed
         from chat_turns t left join chat_conversations c on c.id = t.conversation_id
         where ${owner} t.created_at >= $1 group by 1 order by 1`,
        [since],
      );
      const credits = await sql(
        `select t.agent_id, sum(l.amount)::int as credits
         from credit_ledger l left join chat_turns t on l.workflow_id like 'chat-%' and t.id = l.workflow_id
         where ${scope === 'user' ? `l.user_id = '${who.userId}' and` : ''} l.kind = 'settle' and l.created_at >= $1
         group by 1 order by 2 desc, 1`,
        [since],
      );
      expect(answer.scope).toBe(scope);
      expect(answer.messages_per_day).toEqual(messages);
      expect(unordered(answer.top_tools)).toEqual(unordered(tools));
      expect(answer.turns_per_day).toEqual(turns);
      expect(unordered(answer.credits_per_agent)).toEqual(unordered(credits));
      expect(answer.totals.messages).toBe(messages.reduce((sum, row) => sum + row.messages, 0));
    }
  });
});
