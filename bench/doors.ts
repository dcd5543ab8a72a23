/**
 * `npm run bench:doors`: what each door of the gateway costs beside `/v1/chat/completions` on the same upstream, on
 * `npm start` as shipped: Anthropic's Messages API (`/v1/messages`), OpenAI's Responses API (`/v1/responses`, stored,
 * and with `store: false`), and a background Response from `background: true` to `completed` (polled) beside a
 * synchronous one.
 *
 * As `npm run bench:chat` does (bench/chat.ts): the upstream is the provider simulator in its own process, answering at
 * once; Tessera is `npm start` in its own processes, data directory and ports, with a metered business key; the load a
 * closed loop from this process. Every answer is checked (a text answer in the door's shape). For the Tessera arms the
 * CPU of every platform process is metered. Writes bench/doors-results.md. BENCH_QUICK=1: a smoke run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { exchange, jsonAnswer, post, type Sample, type Target } from './http-client.ts';
import { createBenchKey, shippedProcesses, type Platform, type Upstream } from './arms.ts';
import { benchLog, endBench, quick, shrink } from './bench-process.ts';
import { measureArm, type MeasuredArm } from './measure.ts';
import {
  cellTable,
  costTable,
  failureLines,
  reportLead,
  writeResults,
  type ArmResult,
  type CellResult,
  type CellSpec,
} from './report.ts';
import { waitForIdlePlatform, withShippedRun, type ShippedRun } from './shipped-run.ts';

// Apart from the other benches' ports (and `npm start`'s defaults), so they can share a machine.
const ports = { upstream: 19030, shipped: 18100, temporal: 17253, postgres: 15452 };

const model = 'gpt-4o-mini';
const upstreamModel = 'gpt-4o-mini-2024-07-18';
const prompt = 'Say hello to the benchmark in one short sentence.';

const armNames = {
  direct: 'direct',
  completions: 'tessera /v1/chat/completions',
  messages: 'tessera /v1/messages',
  responses: 'tessera /v1/responses',
  unstored: 'tessera /v1/responses, store: false',
  background: 'tessera /v1/responses, background → completed',
} as const;
type ArmName = (typeof armNames)[keyof typeof armNames];

interface DoorCell extends CellSpec {
  arms: ArmName[];
}

const cells: DoorCell[] = [
  {
    id: 'A',
    title: 'Cell A: 1 client',
    clients: 1,
    upstreamMs: 0,
    stream: false,
    requests: 500,
    arms: [armNames.direct, armNames.completions, armNames.messages, armNames.responses, armNames.unstored],
  },
  {
    id: 'B',
    title: 'Cell B: 8 clients',
    clients: 8,
    upstreamMs: 0,
    stream: false,
    seconds: 15,
    arms: [armNames.direct, armNames.completions, armNames.messages, armNames.responses],
  },
  {
    id: 'C',
    title: 'Cell C: 1 client, a background Response to completed, beside a synchronous one',
    clients: 1,
    upstreamMs: 0,
    stream: false,
    requests: 200,
    arms: [armNames.direct, armNames.responses, armNames.background],
  },
];

const log = benchLog('bench:doors');

const isCompletion = jsonAnswer<{ choices?: Array<{ message?: { content?: string } }> }>(
  (body) => !!body.choices?.[0]?.message?.content,
);
const isMessage = jsonAnswer<{ type?: string; content?: Array<{ type: string; text?: string }> }>(
  (body) => body.type === 'message' && !!body.content?.[0]?.text,
);
const isResponse = jsonAnswer<{ status?: string; output?: Array<{ type: string; content?: Array<{ text: string }> }> }>(
  (body) => body.status === 'completed' && !!body.output?.[0]?.content?.[0]?.text,
);

/** POSTs a background Response, then reads it every 5 ms until it is completed: the whole as one sample. */
async function backgroundToCompleted(create: Target, read: (id: string) => Target): Promise<Sample> {
  const startedAt = performance.now();
  let id = '';
  const created = await exchange('POST', create, {
    body: JSON.stringify({ model, input: prompt, background: true }),
    expect: jsonAnswer<{ id?: string; status?: string }>((body) => {
      id = body.id ?? '';
      return body.status === 'queued';
    }),
  });
  if (!created.ok) return created;
  for (;;) {
    const polled = await exchange('GET', read(id), { expect: isResponse });
    if (polled.ok) return { ...polled, totalMs: performance.now() - startedAt };
    if (polled.status !== 200 || performance.now() - startedAt > 30_000) return polled;
    await sleep(5);
  }
}

function buildArms(upstream: Upstream, platform: Platform, key: string): Map<ArmName, MeasuredArm> {
  const processes = () => shippedProcesses(platform);
  const tessera = (path: string): Target => ({
    url: `${platform.url}${path}`,
    headers: { authorization: `Bearer ${key}` },
  });
  const direct: Target = { url: `${upstream.url}/v1/chat/completions`, headers: { authorization: 'Bearer bench' } };
  const single = JSON.stringify({ model: upstreamModel, messages: [{ role: 'user', content: prompt }] });
  const responses = tessera('/v1/responses');
  const arms: MeasuredArm[] = [
    { name: armNames.direct, call: () => post(direct, single, false, isCompletion) },
    {
      name: armNames.completions,
      call: () =>
        post(
          tessera('/v1/chat/completions'),
          JSON.stringify({ model, messages: [{ role: 'user', content: prompt }] }),
          false,
          isCompletion,
        ),
      processes,
    },
    {
      name: armNames.messages,
      call: () =>
        post(
          tessera('/v1/messages'),
          JSON.stringify({ model, max_tokens: 4096, messages: [{ role: 'user', content: prompt }] }),
          false,
          isMessage,
        ),
      processes,
    },
    {
      name: armNames.responses,
      call: () => post(responses, JSON.stringify({ model, input: prompt }), false, isResponse),
      processes,
    },
    {
      name: armNames.unstored,
      call: () => post(responses, JSON.stringify({ model, input: prompt, store: false }), false, isResponse),
      processes,
    },
    {
      name: armNames.background,
      call: () => backgroundToCompleted(responses, (id) => tessera(`/v1/responses/${id}`)),
      processes,
    },
  ];
  return new Map(arms.map((arm) => [arm.name as ArmName, arm]));
}

const startedAt = Date.now();
const results: CellResult[] = [];

async function runCells({ upstream, platform }: ShippedRun): Promise<void> {
  const key = await createBenchKey(platform);
  const arms = buildArms(upstream, platform, key);
  await waitForIdlePlatform(platform, log);
  for (const [index, cell] of cells.entries()) {
    log(cell.title);
    await upstream.setLatency(cell.upstreamMs);
    // The direct arm first; the Tessera arms in an order rotating from cell to cell, so drift hits each alike.
    const others = cell.arms.filter((name) => name !== armNames.direct);
    const shift = index % others.length;
    const ordered = [armNames.direct, ...others.slice(shift), ...others.slice(0, shift)];
    const armResults: ArmResult[] = [];
    for (const name of ordered) {
      const { serverTimings: _timings, ...result } = await measureArm(arms.get(name)!, {
        load: {
          concurrency: cell.clients,
          requests: cell.requests ? shrink(cell.requests) : Number.POSITIVE_INFINITY,
          maxMs: cell.seconds ? (quick ? 3_000 : cell.seconds * 1000) : 300_000,
        },
        log,
      });
      armResults.push(result);
    }
    results.push({ cell, arms: cell.arms.map((name) => armResults.find((result) => result.arm === name)!) });
  }
}

const failure = await withShippedRun({ name: 'bench-doors', ports, log }, runCells);
const sections: string[] = [];
for (const result of results) sections.push(`## ${result.cell.title}`, '', cellTable(result), '');
if (results.length) {
  sections.push('## What the platform spends per request', '', costTable(results, 'request'), '');
}
await writeResults(
  'doors-results.md',
  'Tessera doors benchmark',
  [
    reportLead() +
      '`npm run bench:doors`. `npm start` as shipped in its own processes, data directory and ports, with a metered ' +
      'business key; upstream: the provider simulator in its own process, answering at once; load: closed loop from ' +
      `the bench process over node:http keep-alive, everything on the same cores. Model \`${model}\`. "Added" is the ` +
      'arm minus the direct call in the same cell. Latencies in ms, the whole request, answer included; the ' +
      'background arm is the POST (answered `queued`) and reads every 5 ms until the response is `completed`.',
    '',
    ...failureLines(failure),
    ...sections,
  ],
  { startedAt, log },
);
endBench(failure ? 1 : 0);
