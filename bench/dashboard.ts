/**
 * `npm run bench:dashboard`: `GET /dashboard` of the agent service on `npm start` as shipped, measured from this
 * process with 100,000 messages in the database. One account holds them all (the worst case for a caller's
 * dashboard: every message is theirs and in the period), in 500 conversations of 50 turns (a question, a tool call,
 * its result and the answer: 4 messages a turn, 25,000 turns, one settled ledger entry each, every turn answered by
 * one of 8 agents and one of 5 tools), spread over the last 30 days. The rows are written with SQL straight into the
 * platform's database (what 25,000 real turns would leave behind, without the hours they would take): ordinary
 * inserts, so the platform's triggers count them as they count any writer's (db/entities/usage-triggers.ts); the
 * bench then waits for the API process to fold those changes into the daily figures (api/services/dashboard/
 * usage-fold.ts), as it does within seconds of any such load, and vacuums and analyses the tables, as autovacuum
 * does. Measured: the caller's dashboard and the operator's (the platform's), 1 client, sequential requests after a
 * warm-up, p50 / p95 / p99 of the whole request, and the platform's CPU per request (API, PostgreSQL and the rest,
 * from /proc); the load average when each began; and what the triggers cost the writers: the 100,000 messages'
 * insert timed against the same insert into a copy of the table without them.
 * Writes bench/dashboard-results.md. BENCH_QUICK=1 runs 50 requests per arm (a smoke run, not figures).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { usageTables } from '../db/entities/usage-triggers.ts';
import { shippedProcesses } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { percentile } from './load.ts';
import { failureLines, loadNotes, reportLead, writeResults } from './report.ts';
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
const startedAt = Date.now();
/** The machine's load average when each phase began (other work on the cores shows in the figures). */
const loads = loadNotes();
const noteLoad = loads.note;
/** What the seeding measured: the messages' insert with the triggers and into a copy without them, in ms. */
const writes: { messages?: number; withTriggers?: number; withoutTriggers?: number; foldWaitMs?: number } = {};

/** The messages of the seed: `target` is the table (chat_messages, or a copy of it). */
const messagesInsert = (target: string, when: string) =>
  `insert into ${target} (conversation_id, session_id, turn, seq, role, content, tool_calls, tool_call_id,
                              tool_name, agent_id, channel, created_at)
       select 'conv_b' || $1 || c, 'ses_b' || $1 || c, t, m.seq,
              m.role, case m.role when 'tool' then 'result' when 'user' then 'question ' || t else 'answer ' || t end,
              case when m.seq = 1 then jsonb_build_array(jsonb_build_object('id', 'call_' || t, 'type', 'function',
                'function', jsonb_build_object('name', ($2::text[])[1 + t % 5], 'arguments', '{}'))) end,
              case when m.role = 'tool' then 'call_' || t end,
              case when m.role = 'tool' then ($2::text[])[1 + t % 5] end,
              case when m.role = 'assistant' then ($3::text[])[1 + (c + t) % 8] end, 'web', ${when}
       from generate_series(1, $4) c, generate_series(1, $5) t,
            (values (0, 'user'), (1, 'assistant'), (2, 'tool'), (3, 'assistant')) as m(seq, role)`;

async function seed(databaseUrl: string, userId: string): Promise<void> {
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  try {
    const owner = `user:${userId}`;
    const run = randomBytes(4).toString('hex');
    await database.query('begin');
    await database.query(
      `insert into chat_conversations (id, owner, turns, head_path, created_at, updated_at)
       select 'conv_b' || $2 || c, $1, $3, int4multirange(int4range(1, $3::int + 1)), now() - interval '30 days', now()
       from generate_series(1, $4) c`,
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
      `insert into chat_turns (id, conversation_id, number, status, created_at, finished_at, agent_id, parent, path)
       select 'chat-conv_b' || $1 || c || '-' || t, 'conv_b' || $1 || c, t,
              case when (c + t) % 40 = 0 then 'failed' else 'done' end, ${when}, ${when},
              ($2::text[])[1 + (c + t) % 8], nullif(t - 1, 0), int4multirange(int4range(1, t + 1))
       from generate_series(1, $3) c, generate_series(1, $4) t`,
      [run, agents, conversations, turnsPerConversation],
    );
    // The same insert twice: into a copy of chat_messages (its columns, indexes and defaults, no trigger), then into
    // chat_messages itself, whose trigger counts each row. The difference is what counting costs a writer.
    const messageValues = [run, tools, agents, conversations, turnsPerConversation];
    // (A table like any other, not a temporary one: those skip the write-ahead log.)
    await database.query(`create table bench_messages_without_triggers (like chat_messages including all)`);
    let began = performance.now();
    const copied = await database.query(messagesInsert('bench_messages_without_triggers', when), messageValues);
    writes.withoutTriggers = performance.now() - began;
    await database.query('drop table bench_messages_without_triggers');
    began = performance.now();
    await database.query(messagesInsert('chat_messages', when), messageValues);
    writes.withTriggers = performance.now() - began;
    writes.messages = copied.rowCount ?? 0;
    await database.query(
      `insert into credit_ledger (key, user_id, kind, amount, workflow_id, attempt, model, prompt_tokens,
                                  completion_tokens, estimated, created_at)
       select 'bench:' || $1 || ':' || c || ':' || t, $2, 'settle', 1 + (c + t) % 5, 'chat-conv_b' || $1 || c || '-' || t,
              1, 'gpt-4o-mini', 400, 120, false, ${when}
       from generate_series(1, $3) c, generate_series(1, $4) t`,
      [run, userId, conversations, turnsPerConversation],
    );
    await database.query('commit');
    // The API process folds the triggers' changes once thousands are waiting (every 5 s it looks).
    const waitFrom = performance.now();
    for (;;) {
      const { rows: waiting } = await database.query<{ changes: number }>(
        `select (select count(*) from usage_message_changes) + (select count(*) from usage_turn_changes)
                + (select count(*) from usage_credit_changes) as changes`,
      );
      if (Number(waiting[0]!.changes) < 2_000) break;
      if (performance.now() - waitFrom > 120_000) throw new Error(`the usage changes were not folded in 2 minutes`);
      await sleep(250);
    }
    writes.foldWaitMs = performance.now() - waitFrom;
    for (const table of [
      'chat_conversations',
      'chat_sessions',
      'chat_turns',
      'chat_messages',
      'credit_ledger',
      ...usageTables,
    ]) {
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
  noteLoad(label);
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

async function writeReport(failure: string | undefined): Promise<void> {
  const perRow = (ms: number | undefined) =>
    ms === undefined || !writes.messages ? 'n/a' : ((ms * 1000) / writes.messages).toFixed(1);
  const added =
    writes.withTriggers === undefined || writes.withoutTriggers === undefined
      ? undefined
      : writes.withTriggers - writes.withoutTriggers;
  await writeResults(
    'dashboard-results.md',
    'Tessera dashboard benchmark',
    [
      reportLead() +
        '`npm run bench:dashboard`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, the ' +
        'API with its in-process worker, the background worker) in its own processes, data directory and ports. ' +
        `${conversations * turnsPerConversation * 4} messages in ${conversations} conversations of ` +
        `${turnsPerConversation} turns (question, tool call, tool result, answer; one settlement per turn; 8 agents, ` +
        '5 tools) over the last 30 days, all of one account, written with SQL into the platform’s database: the ' +
        'triggers count them as they count every writer, the API process folds the counts into the daily figures, ' +
        'then the tables are vacuumed and analysed. `GET /dashboard` (30 days) from the bench process, one client, ' +
        'one request after another after 20 warm-up requests; times in ms of the whole request; CPU from /proc.',
      '',
      '## GET /dashboard',
      '',
      ...(rows.length
        ? [
            '| dashboard | messages counted | requests | p50 ms | p95 ms | p99 ms | CPU ms/request (platform) | API | PostgreSQL |',
            '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
            ...rows,
          ]
        : ['Not measured (the run stopped before).']),
      '',
      '## What counting costs the writers',
      '',
      `The seed's ${writes.messages ?? 'n/a'} messages inserted in one statement into a copy of \`chat_messages\` ` +
        'without triggers (same columns, indexes and defaults), then into `chat_messages`, whose trigger looks up ' +
        'each message’s conversation owner and appends its change. Bulk figures: a turn’s close writes its few ' +
        'messages in one statement the same way.',
      '',
      '| insert | ms | µs per message |',
      '| --- | --- | --- |',
      `| without triggers | ${writes.withoutTriggers?.toFixed(0) ?? 'n/a'} | ${perRow(writes.withoutTriggers)} |`,
      `| with the usage trigger | ${writes.withTriggers?.toFixed(0) ?? 'n/a'} | ${perRow(writes.withTriggers)} |`,
      `| **added by counting** | ${added?.toFixed(0) ?? 'n/a'} | **${perRow(added)}** |`,
      '',
      `The API process folded the seed's changes ${writes.foldWaitMs === undefined ? 'n/a' : `${(writes.foldWaitMs / 1000).toFixed(1)} s`} ` +
        'after the seed committed (it looks every 5 s).',
      '',
      ...loads.lines(),
      ...failureLines(failure),
    ],
    { startedAt, log },
  );
}

const rows: string[] = [];
const failure = await withShippedRun({ name: 'bench-dashboard', ports, log }, async ({ platform, databaseUrl }) => {
  const created = await fetch(`${platform.url}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.masterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `dashboard-${randomBytes(3).toString('hex')}@example.com`, plan: 'business' }),
  });
  const account = (await created.json()) as { key: string; user_id: string };
  noteLoad('seed');
  await seed(databaseUrl, account.user_id);
  await waitForIdlePlatform(platform, log);
  rows.push(
    await measure(`${platform.agentsUrl}/dashboard`, account.key, 'caller (all 100k messages theirs)', platform),
  );
  rows.push(await measure(`${platform.agentsUrl}/dashboard`, platform.masterKey, 'operator (platform-wide)', platform));
});
await writeReport(failure);
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
