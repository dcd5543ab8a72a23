/**
 * An index survives its worker: SIGKILL the whole platform (`npm start`) while a CSV's chunks are being embedded (the
 * simulated provider answers each batch slowly), restart it, and the index finishes by itself: every chunk written
 * once, numbered without gaps, every one embedded, searchable, and each embedding call's credits settled.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import { csvOf } from '../helpers/documents.ts';
import {
  createBusinessKey,
  platformSetup,
  sqlOnce,
  startPlatformProcess,
  tearDownPlatform,
  type PlatformProcess,
  type PlatformSetup,
} from '../helpers/platform-process.ts';
import { waitFor } from '../helpers/wait.ts';

/** Each embedding batch takes this long upstream, so the platform is killed between batches. */
const embeddingLatencyMs = 1_500;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[rag-index-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  await simulatorControl(simulator.url).addFault({ fault: { latency_ms: embeddingLatencyMs } });
  // A hold of an embedding call lost with the kill is released by the platform's sweep, soon in this test.
  setup = await platformSetup('rag-index-kill', simulator.url, {
    AGENT_IP_LIMIT_PER_MINUTE: '0',
    CREDIT_HOLD_GRACE: '5s',
    CREDIT_HOLD_SWEEP_INTERVAL: '5s',
  });
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

it('finishes an index killed mid-way after a restart, with no chunk written twice', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'rag-kill');
  const headers = { authorization: `Bearer ${key}` };

  const rows: unknown[][] = [['order', 'customer', 'city', 'amount']];
  for (let index = 1; index <= 6_000; index++)
    rows.push([index, `customer ${index % 97}`, `city ${index % 13}`, index * 3]);
  rows.push([6_001, 'Zebulon Quartermaine', 'Ulaanbaatar', 77]);
  const form = new FormData();
  form.append('file', new Blob([csvOf(rows)]), 'orders.csv');
  const uploaded = await fetch(`${setup.agentsUrl}/upload`, { method: 'POST', headers, body: form });
  expect(uploaded.status).toBe(201);
  const file = (await uploaded.json()) as { id: string };
  const started = await fetch(`${setup.agentsUrl}/rag/index`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ file_id: file.id }),
  });
  expect(started.status).toBe(202);
  const { id } = (await started.json()) as { id: string };
  const status = async () =>
    (await (await fetch(`${setup.agentsUrl}/rag/index/${id}`, { headers })).json()) as {
      status: string;
      progress: { chunks_done: number; chunks_total: number | null };
    };

  // Killed once some chunks are embedded and more are left.
  const before = await waitFor(
    'part of the index embedded',
    async () => {
      const current = await status();
      const { chunks_done: done, chunks_total: total } = current.progress;
      return total !== null && done > 0 && done < total && current;
    },
    120_000,
  );
  await platform.kill();
  log(`killed at ${before.progress.chunks_done} of ${before.progress.chunks_total} chunks`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const done = await waitFor(
    'the index to finish after the restart',
    async () => {
      const current = await status();
      return (current.status === 'done' || current.status === 'failed') && current;
    },
    240_000,
  );
  expect(done.status).toBe('done');
  const total = done.progress.chunks_total!;
  expect(done.progress.chunks_done).toBe(total);

  // Every chunk once, numbered 0..n-1, each with its vector.
  const [chunks] = await sql<{ count: string; distinct_seq: string; max_seq: number; embedded: string }>(
    `select count(*), count(distinct seq) as distinct_seq, max(seq) as max_seq, count(embedding) as embedded
     from rag_chunks where document_id = $1`,
    [id],
  );
  expect(Number(chunks!.count)).toBe(total);
  expect(Number(chunks!.distinct_seq)).toBe(total);
  expect(chunks!.max_seq).toBe(total - 1);
  expect(Number(chunks!.embedded)).toBe(total);

  // Nothing held is left behind: each embedding call's hold is settled, or released by the platform.
  await waitFor(
    'no credits held',
    async () => {
      const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
      return account!.held === 0;
    },
    120_000,
  );

  const search = await fetch(
    `${setup.agentsUrl}/rag/search?${new URLSearchParams({ q: 'Zebulon Quartermaine Ulaanbaatar', k: '1' })}`,
    { headers },
  );
  const { results } = (await search.json()) as { results: Array<{ text: string }> };
  expect(results[0]!.text).toContain('Zebulon Quartermaine');
  passed = true;
}, 600_000);
