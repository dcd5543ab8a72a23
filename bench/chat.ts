/**
 * `npm run bench:chat`: the cost of a session chat turn (`POST /api/v1/chat`), next to a direct call to the upstream
 * and to Tessera's own `/v1/chat/completions`, on `npm start` as shipped.
 *
 * As `npm run bench` does (bench/run.ts): the upstream is the provider simulator in its own process, answering at
 * once; Tessera is `npm start` in its own process tree, data directory and ports, with a metered business key; the
 * load is a closed loop from this process. The arms:
 * - direct: one call to the simulator's `/v1/chat/completions`, the base of every "added" figure;
 * - direct tool loop: what a client doing the tool round itself sends the simulator: the message with the tools
 *   Tessera offers (a tool call comes back), then the conversation with a canned calculator result (the answer);
 * - tessera completions: `/v1/chat/completions`, not streamed;
 * - chat turn: `POST /api/v1/chat`, each turn in a new session (constant work per request: a session opened, the
 *   message stored, a one-message history, one model call, the answer stored), or every turn in one session reused
 *   (its history grows by two messages a turn, all of it loaded and sent to the model);
 * - chat turn + calculator: a message with the simulator's `[[call calculator {...}]]` directive: the model's first
 *   call asks for the tool, the turn runs it and calls the model again with its result (new session each turn).
 * Every answer is checked (a turn that did not run its tool counts as an error). For the Tessera arms the CPU and
 * bytes written of every platform process are metered, and PostgreSQL's write transactions and WAL.
 *
 * Writes bench/chat-results.md. BENCH_QUICK=1 runs a fraction of each cell (a smoke run, not figures).
 */
import { release } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { jsonAnswer, post, type Target } from './http-client.ts';
import { createBenchKey, shippedProcesses, type Platform, type Upstream } from './arms.ts';
import { benchLog, endBench, quick, shrink } from './bench-process.ts';
import { measureArm, type MeasuredArm } from './measure.ts';
import {
  cellTable,
  costTable,
  failureLines,
  ms,
  reportLead,
  stageTable,
  summarizeTimings,
  threadTable,
  writeResults,
  type ArmResult,
  type CellResult,
  type CellSpec,
  type StageTiming,
} from './report.ts';
import { waitForIdlePlatform, withShippedRun, type ShippedRun } from './shipped-run.ts';

// Apart from `npm run bench`'s ports (and `npm start`'s defaults), so the two can share a machine.
const ports = { upstream: 19020, shipped: 18090, temporal: 17243, postgres: 15442 };

const model = 'gpt-4o-mini';
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'Say hello to the benchmark in one short sentence.';
const expression = '2+3';
const toolPrompt = `What is ${expression}? [[call calculator {"expression":"${expression}"}]]`;

const armNames = {
  direct: 'direct',
  directToolLoop: 'direct tool loop (2 calls)',
  completions: 'tessera /v1/chat/completions',
  chat: 'chat turn (new session)',
  chatReused: 'chat turn (1 session reused)',
  chatTool: 'chat turn + calculator (new session)',
} as const;
type ArmName = (typeof armNames)[keyof typeof armNames];

interface ChatCell extends CellSpec {
  arms: ArmName[];
}

const cells: ChatCell[] = [
  {
    id: 'A',
    title: 'Cell A: 1 client, no tool',
    clients: 1,
    upstreamMs: 0,
    stream: false,
    requests: 500,
    arms: [armNames.direct, armNames.completions, armNames.chat, armNames.chatReused],
  },
  {
    id: 'B',
    title: 'Cell B: 1 client, a turn with one calculator call',
    clients: 1,
    upstreamMs: 0,
    stream: false,
    requests: 500,
    arms: [armNames.direct, armNames.directToolLoop, armNames.chatTool],
  },
  {
    id: 'C',
    title: 'Cell C: 8 clients',
    clients: 8,
    upstreamMs: 0,
    stream: false,
    seconds: 15,
    arms: [armNames.direct, armNames.directToolLoop, armNames.completions, armNames.chat, armNames.chatTool],
  },
];

const log = benchLog('bench:chat');

interface CompletionBody {
  choices?: Array<{
    message?: { content?: string | null; tool_calls?: Array<{ function?: { name?: string } }> };
  }>;
}
interface ChatBody {
  response?: string;
  tool_calls?: Array<{ tool: string; ok: boolean }>;
}

const isText = jsonAnswer<CompletionBody>((body) => {
  const message = body.choices?.[0]?.message;
  return typeof message?.content === 'string' && message.content.length > 0 && !message.tool_calls?.length;
});
const isCalculatorCall = jsonAnswer<CompletionBody>(
  (body) => body.choices?.[0]?.message?.tool_calls?.[0]?.function?.name === 'calculator',
);
const isPlainTurn = jsonAnswer<ChatBody>((body) => !!body.response && body.tool_calls?.length === 0);
const isCalculatorTurn = jsonAnswer<ChatBody>(
  (body) =>
    !!body.response &&
    body.tool_calls?.length === 1 &&
    body.tool_calls[0]!.tool === 'calculator' &&
    body.tool_calls[0]!.ok,
);

/** The tools Tessera offers the model in a chat turn, as the OpenAI `tools` field (from GET /api/v1/integrations). */
async function offeredTools(platform: Platform, key: string): Promise<unknown[]> {
  const response = await fetch(`${platform.url}/api/v1/integrations`, { headers: { authorization: `Bearer ${key}` } });
  if (!response.ok) throw new Error(`GET /api/v1/integrations: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as {
    tools: Array<{ name: string; description: string; parameters: unknown; configured: boolean }>;
  };
  return body.tools
    .filter((tool) => tool.configured)
    .map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
}

/** Every arm of the bench, by name. */
function buildArms(upstream: Upstream, platform: Platform, key: string, tools: unknown[]): Map<ArmName, MeasuredArm> {
  const processes = () => shippedProcesses(platform);
  const direct: Target = { url: `${upstream.url}/v1/chat/completions`, headers: { authorization: 'Bearer bench' } };
  const tessera = (path: string): Target => ({
    url: `${platform.url}${path}`,
    headers: { authorization: `Bearer ${key}` },
  });
  const completions = tessera('/v1/chat/completions');
  const chat = tessera('/api/v1/chat');
  const runId = randomBytes(4).toString('hex');
  let sessions = 0;
  const newSession = () => `bench-${runId}-${(sessions += 1)}`;
  const turn = (message: string, session: () => string, expect: (text: string) => boolean) => () =>
    post(chat, JSON.stringify({ message, session_id: session(), model }), false, expect);

  const single = JSON.stringify({ model: upstreamModel, messages: [{ role: 'user', content: prompt }] });
  const toolCall = {
    id: 'call_bench',
    type: 'function',
    function: { name: 'calculator', arguments: JSON.stringify({ expression }) },
  };
  const loopFirst = JSON.stringify({ model: upstreamModel, messages: [{ role: 'user', content: toolPrompt }], tools });
  const loopSecond = JSON.stringify({
    model: upstreamModel,
    messages: [
      { role: 'user', content: toolPrompt },
      { role: 'assistant', content: null, tool_calls: [toolCall] },
      { role: 'tool', tool_call_id: toolCall.id, content: JSON.stringify({ expression, result: '5' }) },
    ],
    tools,
  });
  const reusedSession = `bench-${runId}-reused`;

  const arms: MeasuredArm[] = [
    { name: armNames.direct, call: () => post(direct, single, false, isText) },
    {
      name: armNames.directToolLoop,
      call: async () => {
        const startedAt = performance.now();
        const first = await post(direct, loopFirst, false, isCalculatorCall);
        if (!first.ok) return first;
        const second = await post(direct, loopSecond, false, isText);
        return { ...second, totalMs: performance.now() - startedAt };
      },
    },
    {
      name: armNames.completions,
      call: () =>
        post(completions, JSON.stringify({ model, messages: [{ role: 'user', content: prompt }] }), false, isText),
      processes,
    },
    { name: armNames.chat, call: turn(prompt, newSession, isPlainTurn), processes },
    {
      name: armNames.chatReused,
      call: turn(prompt, () => reusedSession, isPlainTurn),
      // The warm-up in sessions of its own: the measured turns start from an empty history.
      warmUpCall: turn(prompt, newSession, isPlainTurn),
      processes,
    },
    { name: armNames.chatTool, call: turn(toolPrompt, newSession, isCalculatorTurn), processes },
  ];
  return new Map(arms.map((arm) => [arm.name as ArmName, arm]));
}

/** PostgreSQL's write transactions (xids assigned) and WAL bytes so far: exact at once, unlike pg_stat counters. */
interface DatabaseCounters {
  xids: number;
  walBytes: number;
}

async function databaseCounters(client: pg.Client): Promise<DatabaseCounters> {
  const { rows } = await client.query<{ xids: string; wal: string }>(
    "select pg_snapshot_xmax(pg_current_snapshot())::text as xids, (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as wal",
  );
  return { xids: Number(rows[0]!.xids), walBytes: Number(rows[0]!.wal) };
}

interface DatabaseRow {
  cell: string;
  arm: string;
  requests: number;
  transactions: number;
  walBytes: number;
}

function databaseTable(rows: DatabaseRow[]): string {
  const lines = ['| cell | arm | write transactions per request | WAL KB per request |', '|---|---|---:|---:|'];
  for (const row of rows) {
    const per = (value: number) => value / Math.max(1, row.requests);
    lines.push(`| ${row.cell} | ${row.arm} | ${per(row.transactions).toFixed(1)} | ${ms(per(row.walBytes) / 1024)} |`);
  }
  return lines.join('\n');
}

const startedAt = Date.now();
const results: CellResult[] = [];
const databaseRows: DatabaseRow[] = [];
let completionTimings: StageTiming[] = [];
let turnTimings: StageTiming[] = [];
let toolCount = 0;

async function runCells({ upstream, platform, databaseUrl }: ShippedRun): Promise<void> {
  const key = await createBenchKey(platform);
  const tools = await offeredTools(platform, key);
  toolCount = tools.length;
  const arms = buildArms(upstream, platform, key, tools);
  // After start-up the processes still compile and settle (the background worker's first schedules): not a cost
  // of the first arm.
  await waitForIdlePlatform(platform, log);
  const database = new pg.Client({ connectionString: databaseUrl });
  database.on('error', () => undefined);
  await database.connect();
  try {
    for (const [index, cell] of cells.entries()) {
      log(cell.title);
      await upstream.setLatency(cell.upstreamMs);
      // The direct arms first; the Tessera arms in an order rotating from cell to cell, so drift hits each alike.
      const directs = cell.arms.filter((name) => !arms.get(name)!.processes);
      const others = cell.arms.filter((name) => arms.get(name)!.processes);
      const shift = index % others.length;
      const ordered = [...directs, ...others.slice(shift), ...others.slice(0, shift)];
      const armResults: ArmResult[] = [];
      for (const name of ordered) {
        const arm = arms.get(name)!;
        let before: DatabaseCounters | undefined;
        let after: DatabaseCounters | undefined;
        const { serverTimings, ...result } = await measureArm(arm, {
          load: {
            concurrency: cell.clients,
            requests: cell.requests ? shrink(cell.requests) : Number.POSITIVE_INFINITY,
            maxMs: cell.seconds ? (quick ? 3_000 : cell.seconds * 1000) : 300_000,
          },
          log,
          ...(arm.processes
            ? {
                beforeLoad: async () => void (before = await databaseCounters(database)),
                afterLoad: async () => void (after = await databaseCounters(database)),
              }
            : {}),
        });
        if (before && after) {
          databaseRows.push({
            cell: cell.id,
            arm: name,
            requests: result.summary.n + result.summary.errors,
            transactions: after.xids - before.xids,
            walBytes: after.walBytes - before.walBytes,
          });
        }
        if (cell.id === 'A' && name === armNames.completions) completionTimings = summarizeTimings(serverTimings);
        if (cell.id === 'A' && name === armNames.chat) turnTimings = summarizeTimings(serverTimings);
        armResults.push(result);
      }
      results.push({ cell, arms: cell.arms.map((name) => armResults.find((result) => result.arm === name)!) });
    }
  } finally {
    await database.end().catch(() => undefined);
  }
}

async function writeReport(): Promise<void> {
  const sections: string[] = [];
  for (const result of results) sections.push(`## ${result.cell.title}`, '', cellTable(result), '');
  if (results.length) {
    sections.push(
      '## What the platform spends per request',
      '',
      costTable(results, 'request'),
      '',
      'CPU and bytes written by every process of `npm start` over the measured requests of the arm (`/proc`). ' +
        `The processes' bytes are write_bytes, what they dirtied in the page cache, counted by whole folio: on this ` +
        `kernel (Linux ${release()}, ext4 with large folios) each commit's 8 KB WAL write and fdatasync in ` +
        'PostgreSQL counts up to about 1 MB (measured with strace: 8 KB a write syscall, ~1 MB of write_bytes), ' +
        'so that column is mostly accounting; the machine column is what the block devices received (every ' +
        'process on the machine, bench logs included).',
      '',
      databaseTable(databaseRows),
      '',
      "PostgreSQL's transaction ids assigned (one per transaction that wrote) and WAL bytes over the arm's " +
        "measured requests (the background worker's idle work included).",
      '',
    );
  }
  const toolTurns = results.find((result) => result.cell.id === 'C')?.arms.find((arm) => arm.arm === armNames.chatTool);
  if (toolTurns?.usage) {
    sections.push(
      '## Where the Node processes spend it (cell C, chat turn + calculator)',
      '',
      threadTable(toolTurns, 'turn'),
      '',
      'CPU ms per turn of the API process (which runs the turns: eager start, its in-process worker; workflow code ' +
        "on the main thread) and the background worker, by thread; the calculator's evaluator is a Node worker " +
        'thread.',
      '',
    );
  }
  if (turnTimings.length) {
    sections.push(
      '## Where a chat turn spends its time in the API (Server-Timing, cell A, new session)',
      '',
      "Consecutive stages: `open` is the turn's opening transaction, `start` the workflow's eager start, `model` to the " +
        "first event of the turn's model call, `turn` from there to the turn's last event (the answer, its settlement " +
        'and the close).',
      '',
      stageTable(turnTimings),
      '',
    );
  }
  if (completionTimings.length) {
    sections.push(
      '## Where a completion spends its time in the API (Server-Timing, cell A)',
      '',
      stageTable(completionTimings),
      '',
    );
  }
  await writeResults(
    'chat-results.md',
    'Tessera chat-turn benchmark',
    [
      reportLead() +
        '`npm run bench:chat`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, the API ' +
        'with its in-process worker, the background worker) in its own processes, data directory and ports, with a ' +
        'metered business key; upstream: the provider simulator in its own process, answering at once; load: closed ' +
        `loop from the bench process over node:http keep-alive, everything on the same cores. Model \`${model}\` ` +
        `(upstream \`${upstreamModel}\`). "Added" is the arm minus the direct call (one call to the simulator) in the ` +
        'same cell. Latencies in ms; the whole request, answer included.',
      '',
      'Arms: **direct**, one call to the simulator; **direct tool loop**, the two calls a client doing the tool ' +
        `round itself sends the simulator (the message with the ${toolCount} tools Tessera offers, then the ` +
        'conversation with a canned calculator result; no tool is run); **tessera /v1/chat/completions**, not ' +
        'streamed; **chat turn**, `POST /api/v1/chat` with a message naming no tool, each turn in a **new session** ' +
        '(the same work each time: a session opened, a one-message history; the tools are offered to the model), or ' +
        'every turn in **one session reused**, whose history grows by two messages a turn (all of it loaded and sent ' +
        `to the model: ${shrink(500) * 2} messages by the last turn of cell A); **chat turn + calculator**, a message ` +
        `with \`[[call calculator {"expression":"${expression}"}]]\`: two model calls and a tool run per turn, each ` +
        'turn in a new session. Every answer is checked (a text answer; the calculator called and successful).',
      '',
      ...failureLines(failure),
      ...sections,
    ],
    { startedAt, log },
  );
}

const failure = await withShippedRun({ name: 'bench-chat', ports, log }, runCells);
await writeReport();
endBench(failure ? 1 : 0);
