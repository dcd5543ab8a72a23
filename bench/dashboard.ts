/**
 * `npm run bench:dashboard`: `GET /dashboard` of the agent service on `npm start` as shipped, measured from this
 * process with 100,000 messages in the database. One account holds them all (the worst case for a caller's
 * dashboard: every message is theirs and in the period), in 500 conversations of 50 turns (a question, a tool call,
 * its result and the answer: 4 messages a turn, 25,000 turns, one settled ledger entry each, every turn answered by
 * one of 8 agents and one of 5 tools), spread over the last 30 days; a second account has a few. The rows are
 * written with SQL straight into the platform's database (what 25,000 real turns would leave behind, without the
 * hours they would take), then the tables are vacuumed and analysed, as autovacuum does after such a load. Measured:
 * the caller's dashboard and the operator's (the platform's), 1 client, sequential requests after a warm-up, p50 /
 * p95 / p99 of the whole request, and the platform's CPU per request (API, PostgreSQL and the rest, from /proc).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { shippedProcesses } from './arms.ts';
import { benchLog, endBench, quick } from './bench-process.ts';
import { percentile } from './load.ts';
import { snapshot, total, usageBetween } from './resources.ts';
import { waitForIdlePlatform, withShippedRun } from './shipped-run.ts';

const log = benchLog('bench:dashboard');
// Apart from the other benches' ports (and `npm start`'s defaults).
const ports = { upstream: 19070, shipped: 18060, temporal: 17293, postgres: 15492 };
const conversations = 500;
const turnsPerConversation = 50;
const requests = quick ? 50 : 1000;
const agents = ['general', 'researcher', 'coder', 'writer', 'analyst', 'translator', 'planner', 'drive'];
const tools = ['web_search', 'calculator', 'web_fetch', 'file_write', 'update_plan'];

async function seed(databaseUrl: string, userId: string): Promise<void> {
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    const owner = `user:${userId}`;
    const run = randomBytes(4).toString('hex');
    await database.query('begin');
    await database.query(
      `insert into chat_conversations (id, owner, turns, created_at, updated_at)
       select 'conv_b' || $2 || c, $1, $3, now() - interval '30 days', now() from generate_series(1, $4) c`,
      [owner, run, turnsPerConversation, conversations],
    );
    await database.query(
      `insert into chat_sessions (id, owner, key, channel, conversation_id, created_at, updated_at)
       select 'ses_b' || $2 || c, $1, 'web:bench-' || $2 || '-' || c, 'web', 'conv_b' || $2 || c,
              now() - interval '30 days', now() from generate_series(1, $3) c`,
      [owner, run, conversations],
    );
    // Turn t of conversation c happened (c * 50 + t) minutes apart over the last 30 days.
    const when = `now() - ((c * ${turnsPerConversation} + t) % 43000) * interval '1 minute'`;
    await database.query(
      `insert into chat_turns (id, conversation_id, number, status, created_at, finished_at, agent_id)
       select 'chat-conv_b' || $1 || c || '-' || t, 'conv_b' || $1 || c, t,
              case when (c + t) % 40 = 0 then 'failed' else 'done' end, ${when}, ${when},
              ($2::text[])[1 + (c + t) % 8]
       from generate_series(1, $3) c, generate_series(1, $4) t`,
      [run, agents, conversations, turnsPerConversation],
    );
    await database.query(
      `insert into chat_messages (conversation_id, session_id, turn, seq, role, content, tool_calls, tool_call_id,
                                  tool_name, agent_id, channel, created_at)
       select 'conv_b' || $1 || c, 'ses_b' || $1 || c, t, m.seq,
              m.role, case m.role when 'tool' then 'result' when 'user' then 'question ' || t else 'answer ' || t end,
              case when m.seq = 1 then jsonb_build_array(jsonb_build_object('id', 'call_' || t, 'type', 'function',
                'function', jsonb_build_object('name', ($2::text[])[1 + t % 5], 'arguments', '{}'))) end,
              case when m.role = 'tool' then 'call_' || t end,
              case when m.role = 'tool' then ($2::text[])[1 + t % 5] end,
              case when m.role = 'assistant' then ($3::text[])[1 + (c + t) % 8] end, 'web', ${when}
       from generate_series(1, $4) c, generate_series(1, $5) t,
            (values (0, 'user'), (1, 'assistant'), (2, 'tool'), (3, 'assistant')) as m(seq, role)`,
      [run, tools, agents, conversations, turnsPerConversation],
    );
    await database.query(
      `insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens,
                                  completion_tokens, estimated, created_at)
       select 'bench:' || $1 || ':' || c || ':' || t, $2, 'settle', 1 + (c + t) % 5, 'chat-conv_b' || $1 || c || '-' || t,
              1, 'gpt-4o-mini', 400, 120, false, ${when}
       from generate_series(1, $3) c, generate_series(1, $4) t`,
      [run, userId, conversations, turnsPerConversation],
    );
    await database.query('commit');
    for (const table of ['chat_conversations', 'chat_sessions', 'chat_turns', 'chat_messages', 'credit_ledger']) {
      await database.query(`vacuum analyze ${table}`);
    }
    const { rows } = await database.query<{ count: string }>('select count(*) from chat_messages');
    log(`seeded: ${rows[0]!.count} messages in the database`);
  } finally {
    await database.end();
  }
}

async function measure(url: string, key: string, label: string, platform: Parameters<typeof shippedProcesses>[0]) {
  const call = async () => {
    const startedAt = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    const body = (await response.json()) as { totals?: { messages: number } };
    if (response.status !== 200) throw new Error(`${label}: HTTP ${response.status} ${JSON.stringify(body)}`);
    return { ms: performance.now() - startedAt, messages: body.totals!.messages };
  };
  for (let warm = 0; warm < 20; warm++) await call();
  const before = await snapshot(await shippedProcesses(platform));
  const times: number[] = [];
  let messages = 0;
  for (let index = 0; index < requests; index++) {
    const sample = await call();
    times.push(sample.ms);
    messages = sample.messages;
  }
  const usage = usageBetween(before, await snapshot(await shippedProcesses(platform)));
  const cpuMs = (seconds: number | undefined) => (((seconds ?? 0) * 1000) / requests).toFixed(2);
  const row =
    `| ${label} | ${messages} | ${requests} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 95).toFixed(1)} | ` +
    `${percentile(times, 99).toFixed(1)} | ${cpuMs(total(usage.cpu))} | ${cpuMs(usage.cpu.get('API'))} | ` +
    `${cpuMs(usage.cpu.get('PostgreSQL'))} |`;
  log(row);
  return row;
}

const rows: string[] = [];
const failure = await withShippedRun({ name: 'bench-dashboard', ports, log }, async ({ platform, databaseUrl }) => {
  const created = await fetch(`${platform.url}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.masterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `dashboard-${randomBytes(3).toString('hex')}@example.com`, plan: 'business' }),
  });
  const account = (await created.json()) as { key: string; user_id: string };
  await seed(databaseUrl, account.user_id);
  await waitForIdlePlatform(platform, log);
  rows.push(
    await measure(`${platform.agentsUrl}/dashboard`, account.key, 'caller (all 100k messages theirs)', platform),
  );
  rows.push(await measure(`${platform.agentsUrl}/dashboard`, platform.masterKey, 'operator (platform-wide)', platform));
});
if (failure) {
  log(`failed: ${failure}`);
  endBench(1);
} else {
  process.stdout.write(
    [
      '| dashboard | messages counted | requests | p50 ms | p95 ms | p99 ms | CPU ms/request (platform) | API | PostgreSQL |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
    ].join('\n'),
  );
  endBench(0);
}
