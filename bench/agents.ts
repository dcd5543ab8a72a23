/**
 * `npm run bench:agents`: what the agent service's routed streaming chat (`POST /chat/stream/{session_id}`, spec 4.1
 * and 6) adds before the user sees something, next to a direct streamed completion to the same upstream, on
 * `npm start` as shipped.
 *
 * As `npm run bench:chat` does (bench/chat.ts): the upstream is the provider simulator in its own process, answering
 * at once; Tessera is `npm start` in its own process tree, data directory and ports, with a metered business key
 * made with the master key; the load is a closed loop from this process. One setting differs from the shipped
 * defaults: the agent service's per-IP limit (spec 8: 30 requests a minute on `/chat`) is off, since every request
 * here comes from one IP.
 *
 * The arms, each N messages one after another (1 client), then N messages from 8 clients at once:
 * - direct: `POST <simulator>/v1/chat/completions` with `stream: true`; its time to the first content chunk is the
 *   base of every "added" figure;
 * - agent chat: `POST <agent service>/chat/stream/{session_id}` with `Authorization: Bearer <te_ key>`, each message
 *   in a new session; timed to the `routed` event (`data: {"type":"routed","agent_id":…,"confidence":…}`) and to the
 *   first `token` event. A message counts only when its stream has a routed event, a token, and ends with
 *   `data: [DONE]` without an `error` event; the first failure's status or error is reported.
 *
 * Writes bench/agents-results.md. BENCH_AGENTS_N sets N (default 200); BENCH_QUICK=1 runs N = 5 (a smoke run).
 * Without the endpoint (HTTP 404, say) the direct arm is still measured and the report says why the agent arm failed.
 */
import { randomBytes } from 'node:crypto';
import { createBenchKey, shippedProcesses, type Platform } from './arms.ts';
import { benchLog, endBench, quick } from './bench-process.ts';
import { post, postAgentChat, type AgentSample, type Sample, type Target } from './http-client.ts';
import { addedCell, costTable, failureLines, ms, rateCell, ratioCell, reportLead, writeResults } from './report.ts';
import { snapshot, usageBetween, type Snapshot, type Usage } from './resources.ts';
import {
  figures,
  firstFailureLines,
  measureCalls,
  measuredRow,
  rowLogLine,
  waitForIdlePlatform,
  withShippedRun,
  type Figures,
  type MeasuredRow,
} from './shipped-run.ts';

const messages = quick ? 5 : Number(process.env.BENCH_AGENTS_N ?? 200);
// Apart from `npm run bench`'s and `npm run bench:chat`'s ports (and `npm start`'s defaults).
const ports = { upstream: 19040, shipped: 18070, temporal: 17263, postgres: 15462 };
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'Say hello to the benchmark in one short sentence.';

const log = benchLog('bench:agents');

interface ArmFigures extends MeasuredRow {
  /** The agent arm only. */
  routed?: Figures;
  firstToken: Figures;
  /** What every process of the platform spent over the measured calls (the agent arm). */
  usage?: Usage;
}

/**
 * A warm-up, then `messages` measured calls from `clients` clients; with `platform`, the CPU and writes of its
 * processes over the measured calls.
 */
async function measure(
  arm: string,
  clients: number,
  call: () => Promise<AgentSample | Sample>,
  platform?: Platform,
): Promise<ArmFigures> {
  let before: Snapshot | undefined;
  let usage: Usage | undefined;
  const result = await measureCalls<AgentSample>(
    clients,
    messages,
    call,
    platform
      ? {
          beforeLoad: async () => void (before = await snapshot(await shippedProcesses(platform))),
          afterLoad: async () => void (usage = usageBetween(before!, await snapshot(await shippedProcesses(platform)))),
        }
      : {},
  );
  const samples = result.samples;
  const measured: ArmFigures = {
    ...measuredRow(arm, clients, result),
    ...(usage ? { usage } : {}),
    ...(samples.some((sample) => sample.routedMs !== undefined)
      ? { routed: figures(samples.map((sample) => sample.routedMs)) }
      : {}),
    firstToken: figures(samples.map((sample) => sample.firstTokenMs)),
  };
  log(
    rowLogLine(
      measured,
      `${measured.routed ? ` routed p50=${ms(measured.routed.p50)}` : ''} first token p50=${ms(measured.firstToken.p50)}`,
    ),
  );
  return measured;
}

function phaseTable(rows: ArmFigures[]): string {
  const direct = rows.find((row) => row.arm === 'direct')?.firstToken;
  const lines = [
    '| arm | n | errors | routed p50 | routed p95 | **first token p50** | first token p95 | **added p50** | added p95 | ratio p50 | ratio p95 | messages/s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const isDirect = row.arm === 'direct';
    const added = (value: number, base: number | undefined) => addedCell(value, base, isDirect);
    const ratio = (value: number, base: number | undefined) => ratioCell(value, base, isDirect);
    lines.push(
      `| ${row.arm} | ${row.n} | ${row.errors} | ${row.routed ? ms(row.routed.p50) : '—'} | ` +
        `${row.routed ? ms(row.routed.p95) : '—'} | **${ms(row.firstToken.p50)}** | ${ms(row.firstToken.p95)} | ` +
        `**${added(row.firstToken.p50, direct?.p50)}** | ${added(row.firstToken.p95, direct?.p95)} | ` +
        `${ratio(row.firstToken.p50, direct?.p50)} | ${ratio(row.firstToken.p95, direct?.p95)} | ` +
        `${rateCell(row.perSecond)} |`,
    );
  }
  lines.push(...firstFailureLines(rows));
  return lines.join('\n');
}

const startedAt = Date.now();
const phases: Array<{ title: string; rows: ArmFigures[] }> = [];
let failure: string | undefined;

/** One message to the agent chat before the load: a missing or broken endpoint stops the agent arm, clearly. */
async function probeAgentChat(target: (sessionId: string) => Target, body: (sessionId: string) => string) {
  const sessionId = `bench-agents-probe-${randomBytes(4).toString('hex')}`;
  const sample = await postAgentChat(target(sessionId), body(sessionId));
  if (!sample.ok)
    throw new Error(`POST /chat/stream/{session_id} failed: ${sample.failure ?? `HTTP ${sample.status}`}`);
}

async function runPhases(platform: Platform, upstreamUrl: string): Promise<void> {
  const key = await createBenchKey(platform);
  const direct: Target = { url: `${upstreamUrl}/v1/chat/completions`, headers: { authorization: 'Bearer bench' } };
  const directBody = JSON.stringify({
    model: upstreamModel,
    messages: [{ role: 'user', content: prompt }],
    stream: true,
  });
  const runId = randomBytes(4).toString('hex');
  let sessions = 0;
  const agentTarget = (sessionId: string): Target => ({
    url: `${platform.agentsUrl}/chat/stream/${encodeURIComponent(sessionId)}`,
    headers: { authorization: `Bearer ${key}` },
  });
  const agentBody = (sessionId: string) => JSON.stringify({ message: prompt, session_id: sessionId });
  const agentCall = () => {
    const sessionId = `bench-agents-${runId}-${(sessions += 1)}`;
    return postAgentChat(agentTarget(sessionId), agentBody(sessionId));
  };
  const directCall = () => post(direct, directBody, true);

  await waitForIdlePlatform(platform, log);
  let agentBroken: string | undefined;
  try {
    await probeAgentChat(agentTarget, agentBody);
  } catch (error) {
    agentBroken = error instanceof Error ? error.message : String(error);
    log(agentBroken);
  }
  for (const clients of [1, 8]) {
    const title = clients === 1 ? `${messages} messages, one after another` : `${messages} messages from 8 clients`;
    log(title);
    const rows = [await measure('direct', clients, directCall)];
    if (!agentBroken) rows.push(await measure('agent chat', clients, agentCall, platform));
    phases.push({ title, rows });
  }
  if (agentBroken) throw new Error(agentBroken);
}

async function writeReport(): Promise<void> {
  const sections = phases.flatMap((phase) => [`## ${phase.title}`, '', phaseTable(phase.rows), '']);
  if (phases.some((phase) => phase.rows.some((row) => row.usage))) {
    sections.push(
      '## What the platform spends per message (agent chat)',
      '',
      costTable(
        phases.map((phase) => ({
          cell: phase,
          arms: phase.rows.map((row) => ({ arm: row.arm, summary: row, ...(row.usage ? { usage: row.usage } : {}) })),
        })),
        'message',
      ),
      '',
      'CPU and bytes written by every process of `npm start` over the measured messages (`/proc`), by role: the API ' +
        '(which serves both services and runs the turns: eager start, its in-process worker), the background worker, ' +
        'the Temporal dev server, PostgreSQL, and npm; divided by the messages that counted. The processes’ bytes are ' +
        'what they dirtied in the page cache (bench/chat-results.md says how this kernel counts them); the machine ' +
        'column is what the block devices received.',
      '',
    );
  }
  await writeResults(
    'agents-results.md',
    'Tessera agent-chat benchmark',
    [
      reportLead() +
        '`npm run bench:agents`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL, the API ' +
        'serving the gateway and the agent service with its in-process worker, the background worker) in its own ' +
        'processes, data directory and ports, with a metered business key; the one setting changed is ' +
        '`AGENT_IP_LIMIT_PER_MINUTE=0` (all the load comes from one IP). Upstream: the provider simulator in its own ' +
        'process, answering at once; load: closed loop from the bench process over node:http keep-alive, everything on ' +
        'the same cores. Times in ms from the request to the event.',
      '',
      '**direct**: `POST <simulator>/v1/chat/completions` with `stream: true` (model ' +
        `\`${upstreamModel}\`), timed to its first content chunk. **agent chat**: \`POST /chat/stream/{session_id}\` ` +
        'on the agent service, each message in a new session, timed to its `routed` event and its first `token` ' +
        'event; it routes the message (a model call of its own) before the agent answers. "Added" and "ratio" compare ' +
        'the first token with the direct arm in the same phase.',
      '',
      ...failureLines(failure),
      ...sections,
    ],
    { startedAt, log },
  );
}

let exitCode = 0;
if (!Number.isInteger(messages) || messages < 1) {
  failure = 'BENCH_AGENTS_N must be a positive integer';
} else {
  failure = await withShippedRun(
    { name: 'bench-agents', ports, environment: { AGENT_IP_LIMIT_PER_MINUTE: '0' }, log },
    ({ platform, upstream }) => runPhases(platform, upstream.url),
  );
}
if (failure) exitCode = 1;
await writeReport();
endBench(exitCode);
