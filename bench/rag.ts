/**
 * `npm run bench:rag`: files, RAG and table imports on `npm start` as shipped (its own process tree, data directory
 * and ports; the provider simulator in a process of its own; the load and the direct calls from this process; the
 * setup of bench/shipped-run.ts). Two runs of `npm start`, each with its embedding model fixed at start:
 *
 * **Local engine** (`EMBEDDING_MODEL=local-embedding`, what `npm start` sets when no provider key is set: the shipped
 * default and the real cost of indexing):
 * 1. Index throughput: a 300-page PDF and a 100k-row CSV, made here, uploaded (`POST /upload`) and indexed
 *    (`POST /rag/index`, polled with `GET /rag/index/{id}` every 200 ms): wall time, extraction and embedding phases,
 *    chunks/s, and the CPU per chunk of every platform process (by role, and the Node processes' worker threads,
 *    where pdf.js and the engine run). Beside each, the same engine called directly in this process on the same
 *    chunks (read back from the index), 64 texts a call as the index embeds them: texts/s and CPU per text, so
 *    "bounded by the embedding engine" is a ratio.
 * 2. Search on that real index (1 client): `GET /rag/search` (k = 10) beside the direct pgvector query (the store's
 *    own search, RagStore.search, from this process: the same statement, vector and session settings), the engine
 *    embedding the query directly, and `POST /v1/embeddings` with the same model (the embedding step through the
 *    platform's path). The arms take turns (rounds of a share of the requests each, in rotating order), so other
 *    work on a shared machine weighs on all of them alike.
 * 3. A ~100 MB CSV table import (`POST /sql/csv_to_db`, followed with `GET /sql/imports/{id}`): time, rows/s, CPU
 *    per 1,000 rows, and the processes' memory (RSS and PSS) sampled every 250 ms against the idle baseline.
 *
 * **Simulated OpenAI** (`text-embedding-3-small` at 512 dimensions, served by the simulator: the default of a
 * deployment with an OpenAI key, nothing changed), where embedding costs next to nothing, so what is measured is the
 * platform's own overhead:
 * 1. The same PDF and CSV indexed (another account), chunks/s and CPU per chunk.
 * 2. Search at 10k and then 100k chunks of the searching account (k = 10), at 1 and 4 clients, the same four arms
 *    (the direct embedding being the simulator's endpoint). The chunks are seeded straight into the index's tables:
 *    generated passages (bench/rag-data.ts) embedded by the simulator's endpoint with the model and size the
 *    platform asks for, so the platform's query vectors match them exactly (checked: a passage's own text finds it
 *    first). Other accounts hold chunks too (the indexed files, 9 × 1k seeded, and a small account of 1k measured as
 *    the selective case), so the user filter matters. After each stage the tables are ANALYZEd (autovacuum would,
 *    later). EXPLAIN ANALYZE of the search at each size, and recall@10 of the HNSW search (the store's settings)
 *    against an exact scan (index scans off) for the same queries.
 *
 * The simulator's vectors are hashed bags of words (simulator/embeddings.ts), not a neural model's: texts sharing
 * words are near, and the distribution differs from a real model's, which matters for HNSW's recall and work; the
 * report says so beside the figures. Writes bench/rag-results.md. BENCH_QUICK=1 runs small sizes (a smoke run).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LocalEmbeddingEngine } from '../activities/embeddings/local-engine.ts';
import {
  RagStore,
  ragDimensions,
  searchSettings,
  searchStatement,
  vectorLiteral,
} from '../activities/rag/rag-store.ts';
import { createBenchAccount, repositoryRoot, shippedProcesses, type Platform } from './arms.ts';
import { benchLog, endBench, quick, sleep } from './bench-process.ts';
import { exchange, jsonAnswer, type Sample, type Target } from './http-client.ts';
import { percentile, runLoad, summarize, type Summary } from './load.ts';
import type { MeasuredArm } from './measure.ts';
import { passages, questionAbout, reportPdf, seededRandom, wideRowsFor, writeSalesCsv } from './rag-data.ts';
import { failureLines, ms, reportLead, writeResults } from './report.ts';
import { memoryByRole, snapshot, sumUsage, total, usageBetween, type Role, type Usage } from './resources.ts';
import { waitForIdlePlatform, withShippedRun, type ShippedRun } from './shipped-run.ts';

// Apart from the other benches' ports (and `npm start`'s defaults).
const ports = { upstream: 19070, shipped: 18040, temporal: 17293, postgres: 15492 };
const log = benchLog('bench:rag');
const startedAt = Date.now();
const filesDir = join(repositoryRoot, '.data', 'bench-rag-files');

const sizes = quick
  ? {
      pdfPages: 10,
      csvRows: 2_000,
      directTexts: 32,
      stages: [1_000, 3_000],
      selective: 200,
      others: 2,
      otherEach: 200,
      perDocument: 100,
      requests: { 1: 20, 4: 20 } as Record<number, number>,
      localRequests: 10,
      recallQueries: 10,
      importBytes: 5_000_000,
    }
  : {
      pdfPages: 300,
      csvRows: 100_000,
      directTexts: 320,
      stages: [10_000, 100_000],
      selective: 1_000,
      others: 9,
      otherEach: 1_000,
      perDocument: 200,
      requests: { 1: 400, 4: 400 } as Record<number, number>,
      localRequests: 200,
      recallQueries: 100,
      importBytes: 100_000_000,
    };
const k = 10;
/** The search arms take turns this many times (see measureSearch). */
const rounds = quick ? 2 : 5;
const simulatedModel = 'text-embedding-3-small';
const localModel = 'local-embedding';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// ---------------------------------------------------------------------------------------------------------------
// What the report gathers

interface RunNote {
  name: string;
  loadBefore: number[];
  jestRunning: boolean;
}

interface IndexRow {
  engine: string;
  source: string;
  fileBytes: number;
  uploadSeconds: number;
  chunks: number;
  wallSeconds: number;
  extractSeconds: number;
  embedSeconds: number;
  usage: Usage;
  direct?: DirectEngine;
}

interface DirectEngine {
  texts: number;
  seconds: number;
  cpuSeconds: number;
}

interface SearchRow {
  stage: string;
  clients: number;
  arm: string;
  summary: Summary;
  usage?: Usage;
  /** The base of the "added" column. */
  isBase: boolean;
}

interface RecallRow {
  stage: string;
  queries: number;
  recall: number;
  /** Queries whose HNSW search returned fewer than k rows. */
  short: number;
  hnswP50: number;
  exactP50: number;
  /** The same with `hnsw.ef_search = 200`. */
  wideRecall: number;
  wideP50: number;
}

interface SeedRow {
  label: string;
  chunks: number;
  seconds: number;
}

interface ImportRow {
  fileBytes: number;
  rows: number;
  badRows: number;
  uploadSeconds: number;
  importSeconds: number;
  usage: Usage;
  baseline: { rss: Map<Role, number>; pss: Map<Role, number> };
  peak: { rss: Map<Role, number>; pss: Map<Role, number>; rssTotal: number; pssTotal: number };
  baselineTotals: { rss: number; pss: number };
}

const runNotes: RunNote[] = [];
const indexRows: IndexRow[] = [];
const searchRows: SearchRow[] = [];
const recallRows: RecallRow[] = [];
const seedRows: SeedRow[] = [];
const plans: Array<{ stage: string; plan: string }> = [];
const stageCounts: Array<{ stage: string; user: number; table: number }> = [];
let importRow: ImportRow | undefined;
const failures: string[] = [];

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

async function json(response: Response, what: string): Promise<Json> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${what}: ${response.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as Json;
}

function agentsCall(platform: Platform, key: string, path: string, init: RequestInit = {}): Promise<Json> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (typeof init.body === 'string') headers['content-type'] = 'application/json';
  return fetch(`${platform.agentsUrl}${path}`, { ...init, headers }).then((response) =>
    json(response, `${init.method ?? 'GET'} ${path}`),
  );
}

/** Uploads a file from disk (multipart, streamed from the file); answers the file's id and how long it took. */
async function upload(platform: Platform, key: string, path: string, name: string) {
  const form = new FormData();
  form.append('file', await openAsBlob(path), name);
  const started = performance.now();
  const file = await agentsCall(platform, key, '/upload', { method: 'POST', body: form });
  return { id: String(file.id), bytes: Number(file.bytes), seconds: (performance.now() - started) / 1000 };
}

/** A call that is not HTTP (the direct query, the engine), timed as a Sample: ok when `call` answers true. */
async function timed(call: () => Promise<boolean>): Promise<Sample> {
  const started = performance.now();
  try {
    const ok = await call();
    return {
      ok,
      status: ok ? 200 : 0,
      totalMs: performance.now() - started,
      ...(ok ? {} : { failure: 'wrong answer' }),
    };
  } catch (error) {
    return { ok: false, status: 0, totalMs: performance.now() - started, failure: (error as Error).message };
  }
}

/** Round-robin over `items`, one cursor per arm. */
function cycle<T>(items: T[]): () => T {
  let next = 0;
  return () => items[next++ % items.length]!;
}

/** Whether a jest process runs on the machine (a test run beside the bench makes its figures worthless). */
function jestRunning(): boolean {
  try {
    return execFileSync('pgrep', ['-f', 'jest'], { encoding: 'utf8' }).trim() !== '';
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}

function noteRun(name: string): void {
  const jest = jestRunning();
  const note = { name, loadBefore: loadavg(), jestRunning: jest };
  runNotes.push(note);
  log(
    `${name}: load average ${note.loadBefore.map((value) => value.toFixed(2)).join(', ')}${jest ? ', A JEST RUN IS ON THE MACHINE' : ''}`,
  );
}

const processesOf = (platform: Platform) => () => shippedProcesses(platform);

/**
 * Before a measured phase: waits while a jest run is on the machine (a test run beside the bench makes its figures
 * worthless; at most 30 minutes, then the phase runs and its "cores busy elsewhere" says so), then for an idle
 * platform. A quick run does not wait for jest: it checks that the bench works, its figures mean nothing.
 */
async function settle(platform: Platform): Promise<void> {
  await waitWhileJest();
  await waitForIdlePlatform(platform, log);
}

async function waitWhileJest(): Promise<void> {
  if (quick || !jestRunning()) return;
  log('a jest run is on the machine: waiting for it to end');
  const deadline = Date.now() + 30 * 60_000;
  while (jestRunning() && Date.now() < deadline) await sleep(10_000);
  log(jestRunning() ? 'still a jest run after 30 minutes: measuring anyway' : 'the jest run ended');
}

// ---------------------------------------------------------------------------------------------------------------
// Index throughput

/** Uploads and indexes one file, timing its phases and metering the platform; answers the index's row. */
async function indexFile(
  platform: Platform,
  key: string,
  file: { path: string; name: string; source: string },
  engine: string,
): Promise<IndexRow & { documentId: string }> {
  await settle(platform);
  const uploaded = await upload(platform, key, file.path, file.name);
  await settle(platform);
  const before = await snapshot(await shippedProcesses(platform));
  const started = performance.now();
  const index = await agentsCall(platform, key, '/rag/index', {
    method: 'POST',
    body: JSON.stringify({ file_id: uploaded.id }),
  });
  let embeddingFrom: number | undefined;
  let last: Json;
  for (;;) {
    last = await agentsCall(platform, key, `/rag/index/${index.id}`);
    const now = performance.now();
    if (last.status === 'embedding' && embeddingFrom === undefined) embeddingFrom = now;
    if (last.status === 'done') break;
    if (last.status === 'failed') throw new Error(`indexing ${file.name} failed: ${last.error}`);
    await sleep(200);
  }
  const ended = performance.now();
  const usage = usageBetween(before, await snapshot(await shippedProcesses(platform)));
  const row = {
    engine,
    source: file.source,
    fileBytes: uploaded.bytes,
    uploadSeconds: uploaded.seconds,
    chunks: Number(last.progress.chunks_total),
    wallSeconds: (ended - started) / 1000,
    extractSeconds: ((embeddingFrom ?? ended) - started) / 1000,
    embedSeconds: (ended - (embeddingFrom ?? started)) / 1000,
    usage,
    documentId: String(index.id),
  };
  log(
    `  ${engine}, ${file.source}: ${row.chunks} chunks in ${row.wallSeconds.toFixed(1)} s ` +
      `(${(row.chunks / row.wallSeconds).toFixed(1)} chunks/s; CPU ${((total(usage.cpu) * 1000) / row.chunks).toFixed(1)} ms a chunk)`,
  );
  return row;
}

/** The engine called directly in this process on `texts`, 64 a call as the index embeds them. */
async function directEngine(engine: LocalEmbeddingEngine, texts: string[]): Promise<DirectEngine> {
  await engine.embed(texts.slice(0, 16));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let start = 0; start < texts.length; start += 64) await engine.embed(texts.slice(start, start + 64));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const result = { texts: texts.length, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  log(`  engine alone: ${(texts.length / seconds).toFixed(1)} texts/s`);
  return result;
}

/** Chunks of an index, spread over it (every n-th), for the direct engine and the queries. */
async function chunkTexts(pool: pg.Pool, documentId: string, count: number): Promise<string[]> {
  const { rows } = await pool.query<{ text: string }>(
    `select text from (select text, seq, count(*) over () as n from rag_chunks where document_id = $1) c
     where seq % greatest(1, n / $2) = 0 order by seq limit $2`,
    [documentId, count],
  );
  return rows.map((row) => row.text);
}

// ---------------------------------------------------------------------------------------------------------------
// Search

interface Query {
  text: string;
  vector: Float32Array;
}

interface SearchSetup {
  platform: Platform;
  key: string;
  userId: string;
  store: RagStore;
  model: string;
  queries: Query[];
  /** The embedding of one query without the platform (the engine here, or the simulator's endpoint). */
  directEmbedding: { name: string; call: (text: string) => Promise<Sample> };
  /** `dimensions` for `POST /v1/embeddings`, as the RAG index asks the model. */
  dimensions?: number;
}

const armNames = {
  query: 'pgvector query (direct)',
  gateway: 'POST /v1/embeddings',
  search: 'GET /rag/search',
};

function searchArms(setup: SearchSetup, expected: number): MeasuredArm[] {
  const { platform, key, userId, store, model, queries } = setup;
  const processes = processesOf(platform);
  const gateway: Target = { url: `${platform.url}/v1/embeddings`, headers: { authorization: `Bearer ${key}` } };
  const nextQuery = cycle(queries);
  const nextDirect = cycle(queries);
  const nextGateway = cycle(queries);
  const nextSearch = cycle(queries);
  const isVector = jsonAnswer<{ data?: Array<{ embedding?: number[] }> }>(
    (body) => body.data?.[0]?.embedding?.length === ragDimensions,
  );
  const isResult = jsonAnswer<{ results?: unknown[] }>((body) => body.results?.length === expected);
  return [
    {
      name: armNames.query,
      processes,
      call: () =>
        timed(async () => {
          const hits = await store.search(userId, nextQuery().vector, { model, k });
          return hits.length === expected;
        }),
    },
    { name: setup.directEmbedding.name, processes, call: () => setup.directEmbedding.call(nextDirect().text) },
    {
      name: armNames.gateway,
      processes,
      call: () =>
        exchange('POST', gateway, {
          body: JSON.stringify({
            model,
            input: nextGateway().text,
            ...(setup.dimensions ? { dimensions: setup.dimensions } : {}),
          }),
          expect: isVector,
        }),
    },
    {
      name: armNames.search,
      processes,
      call: () => {
        const query = new URLSearchParams({ q: nextSearch().text, k: String(k) });
        return exchange(
          'GET',
          { url: `${platform.agentsUrl}/rag/search?${query}`, headers: { authorization: `Bearer ${key}` } },
          { expect: isResult },
        );
      },
    },
  ];
}

async function measureSearch(
  setup: SearchSetup,
  stage: string,
  clients: number,
  requests: number,
  expected = k,
): Promise<void> {
  await settle(setup.platform);
  log(`search, ${stage}, ${clients} client(s)`);
  const arms = searchArms(setup, expected);
  for (const arm of arms) {
    await runLoad({ concurrency: clients, requests: Math.max(clients * 2, 20), maxMs: 10_000 }, arm.call);
  }
  // The arms take turns, a share of the requests at a time in rotating order, so that other work on the machine
  // (a shared one) weighs on every arm alike and the differences between them stay meaningful.
  const gathered = arms.map(() => ({
    samples: [] as Sample[],
    errors: 0,
    elapsedMs: 0,
    usage: undefined as Usage | undefined,
  }));
  for (let round = 0; round < rounds; round++) {
    await waitWhileJest();
    for (let offset = 0; offset < arms.length; offset++) {
      const index = (round + offset) % arms.length;
      const arm = arms[index]!;
      const into = gathered[index]!;
      const before = await snapshot(await arm.processes!());
      const result = await runLoad(
        { concurrency: clients, requests: Math.ceil(requests / rounds), maxMs: 600_000 },
        arm.call,
      );
      const usage = usageBetween(before, await snapshot(await arm.processes!()));
      into.samples.push(...result.samples);
      into.errors += result.errors;
      into.elapsedMs += result.elapsedMs;
      into.usage = into.usage ? sumUsage(into.usage, usage) : usage;
    }
  }
  for (const [index, arm] of arms.entries()) {
    const { samples, errors, elapsedMs, usage } = gathered[index]!;
    const summary = summarize({ samples, errors, elapsedMs, cutShort: false }, (sample) => sample.totalMs);
    log(
      `  ${arm.name.padEnd(34)} n=${summary.n} errors=${errors} p50=${ms(summary.p50)} p99=${ms(summary.p99)} ` +
        `${summary.perSecond.toFixed(0)}/s`,
    );
    if (errors > 0) failures.push(`${stage} ${arm.name} × ${clients}: ${errors} errors`);
    searchRows.push({
      stage,
      clients,
      arm: arm.name,
      summary,
      ...(usage ? { usage } : {}),
      isBase: arm.name === armNames.query,
    });
  }
}

/** Runs the store's search statement under its settings (plus `extra`), as the store does, answering its rows. */
async function searchRowsOf(
  pool: pg.Pool,
  parameters: { vector: Float32Array; userId: string; model: string },
  extra: string[] = [],
  explain = false,
): Promise<Array<Record<string, unknown>>> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    for (const setting of [...searchSettings, ...extra]) await client.query(setting);
    const { rows } = await client.query(`${explain ? 'explain (analyze, buffers) ' : ''}${searchStatement}`, [
      vectorLiteral(parameters.vector),
      parameters.userId,
      parameters.model,
      null,
      k,
    ]);
    await client.query('commit');
    return rows as Array<Record<string, unknown>>;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Recall@k of the HNSW search against an exact scan (index scans off: the user's rows sorted by distance), with the
 * store's settings and, for comparison, with a wider search (`hnsw.ef_search` 200).
 */
async function measureRecall(
  pool: pg.Pool,
  stage: string,
  userId: string,
  model: string,
  queries: Query[],
): Promise<void> {
  const found = { shipped: 0, wide: 0 };
  let short = 0;
  const times = { shipped: [] as number[], wide: [] as number[], exact: [] as number[] };
  for (const { vector } of queries) {
    const timedRows = async (into: number[], extra: string[]) => {
      const started = performance.now();
      const rows = await searchRowsOf(pool, { vector, userId, model }, extra);
      into.push(performance.now() - started);
      return rows;
    };
    const exact = await timedRows(times.exact, ['set local enable_indexscan = off']);
    const exactKeys = new Set(exact.map((row) => `${row.document_id}\u0000${row.text}`));
    // A row at the same distance as the exact k-th is as right as it (ties).
    const limit = Number(exact.at(-1)?.distance ?? 0) + 1e-6;
    const right = (rows: Array<Record<string, unknown>>) =>
      rows.filter((row) => exactKeys.has(`${row.document_id}\u0000${row.text}`) || Number(row.distance) <= limit)
        .length;
    const shipped = await timedRows(times.shipped, []);
    if (shipped.length < k) short++;
    found.shipped += right(shipped);
    found.wide += right(await timedRows(times.wide, ['set local hnsw.ef_search = 200']));
  }
  const row = {
    stage,
    queries: queries.length,
    recall: found.shipped / (queries.length * k),
    short,
    hnswP50: percentile(times.shipped, 50),
    exactP50: percentile(times.exact, 50),
    wideRecall: found.wide / (queries.length * k),
    wideP50: percentile(times.wide, 50),
  };
  recallRows.push(row);
  log(
    `  recall@${k} ${stage}: ${row.recall.toFixed(3)} (${short} short; ef_search 200: ${row.wideRecall.toFixed(3)}; ` +
      `exact scan p50 ${ms(row.exactP50)} ms)`,
  );
}

async function explainSearch(pool: pg.Pool, stage: string, userId: string, model: string, query: Query) {
  const rows = await searchRowsOf(pool, { vector: query.vector, userId, model }, [], true);
  // The query's vector is written out in full in the plan: shortened, so the plan can be read.
  const plan = rows
    .map((row) => String(row['QUERY PLAN']).replace(/'\[[^\]]*\]'::vector/g, `'[${ragDimensions} floats]'::vector`))
    .join('\n');
  plans.push({ stage, plan });
  const usesIndex = plan.includes('rag_chunks_embedding_index');
  log(`  EXPLAIN ${stage}: ${usesIndex ? 'HNSW index used' : 'HNSW INDEX NOT USED'}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Seeding the index (the simulated run)

/** Vectors of `texts` from the simulator's endpoint, with the model and size the platform asks for. */
async function simulatorVectors(simulatorUrl: string, texts: string[]): Promise<Float32Array[]> {
  const response = await fetch(`${simulatorUrl}/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: 'Bearer bench', 'content-type': 'application/json' },
    body: JSON.stringify({ model: simulatedModel, input: texts, dimensions: ragDimensions }),
  });
  const body = await json(response, 'simulator embeddings');
  return (body.data as Array<{ embedding: number[] }>).map((entry) => Float32Array.from(entry.embedding));
}

/**
 * Writes `count` generated passages for `userId` straight into the index's tables, in finished documents of
 * `perDocument` chunks, two documents at a time (both cores: the HNSW index is built as rows arrive).
 */
async function seed(
  pool: pg.Pool,
  simulatorUrl: string,
  spec: { userId: string; count: number; seed: number },
): Promise<void> {
  const documents = Math.ceil(spec.count / sizes.perDocument);
  let next = 0;
  const worker = async () => {
    for (let document = next++; document < documents; document = next++) {
      const size = Math.min(sizes.perDocument, spec.count - document * sizes.perDocument);
      const texts = passages(spec.seed * 100_003 + document, size, size);
      const vectors = await simulatorVectors(simulatorUrl, texts);
      const id = `idx_${randomBytes(12).toString('base64url')}`;
      await pool.query(
        `insert into rag_documents (id, user_id, file_id, title, source, status, model, chunks_total, chunks_done, finished_at)
         values ($1, $2, null, $3, 'text', 'done', $4, $5, $5, now())`,
        [id, spec.userId, `seeded ${spec.seed}.${document}`, simulatedModel, size],
      );
      await pool.query(
        `insert into rag_chunks (document_id, seq, user_id, file_id, model, text, location, embedding)
         select $1, c.seq, $2, null, $3, c.text, '{"kind":"text"}'::jsonb, c.embedding::vector
         from unnest($4::int[], $5::text[], $6::text[]) as c(seq, text, embedding)`,
        [
          id,
          spec.userId,
          simulatedModel,
          texts.map((_, index) => index),
          texts,
          vectors.map((vector) => vectorLiteral(vector)),
        ],
      );
    }
  };
  await Promise.all([worker(), worker()]);
}

/** Runs `seeding` (which writes `chunks` chunks) and keeps how long it took. */
async function timedSeed(label: string, chunks: number, seeding: () => Promise<void>): Promise<void> {
  const started = performance.now();
  await seeding();
  const seconds = (performance.now() - started) / 1000;
  seedRows.push({ label, chunks, seconds });
  log(`  seeded ${label}: ${chunks} chunks in ${seconds.toFixed(1)} s`);
}

/** Queries about the seeded passages of a user (each passage regenerated from its seed), with their vectors. */
async function seededQueries(simulatorUrl: string, userSeed: number, chunks: number, count: number): Promise<Query[]> {
  const random = seededRandom(userSeed + 7);
  const documents = Math.ceil(chunks / sizes.perDocument);
  const texts: string[] = [];
  for (let index = 0; index < count; index++) {
    const document = Math.floor(random() * documents);
    const size = Math.min(sizes.perDocument, chunks - document * sizes.perDocument);
    const passage = passages(userSeed * 100_003 + document, size, size)[Math.floor(random() * size)]!;
    texts.push(questionAbout(random, passage));
  }
  const vectors = await simulatorVectors(simulatorUrl, texts);
  return texts.map((text, index) => ({ text, vector: vectors[index]! }));
}

/** The platform embeds a seeded passage's own text to the seeded vector: its search finds the passage first. */
async function checkSeedMatches(platform: Platform, key: string, passage: string): Promise<void> {
  const query = new URLSearchParams({ q: passage, k: '1' });
  const body = await agentsCall(platform, key, `/rag/search?${query}`);
  const hit = (body.results as Json[])[0];
  if (!hit || hit.text !== passage || hit.score < 0.999) {
    throw new Error(
      `the seeded vectors do not match the platform's (top hit ${JSON.stringify(hit).slice(0, 200)}): search would measure nothing real`,
    );
  }
  log(`  check: a seeded passage's own text finds it first (score ${hit.score})`);
}

async function tableCounts(pool: pg.Pool, stage: string, userId: string): Promise<void> {
  const { rows } = await pool.query<{ user: string; table: string }>(
    `select count(*) filter (where user_id = $1) as user, count(*) as table from rag_chunks`,
    [userId],
  );
  stageCounts.push({ stage, user: Number(rows[0]!.user), table: Number(rows[0]!.table) });
}

// ---------------------------------------------------------------------------------------------------------------
// The table import

async function measureImport(platform: Platform, key: string, path: string, rows: number): Promise<void> {
  const processes = processesOf(platform);
  await settle(platform);
  const baseline = { rss: await memoryByRole(await processes()), pss: await memoryByRole(await processes(), true) };
  const peak = { rss: new Map<Role, number>(), pss: new Map<Role, number>(), rssTotal: 0, pssTotal: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const list = await processes();
      const rss = await memoryByRole(list);
      const pss = await memoryByRole(list, true);
      for (const [role, value] of rss) peak.rss.set(role, Math.max(peak.rss.get(role) ?? 0, value));
      for (const [role, value] of pss) peak.pss.set(role, Math.max(peak.pss.get(role) ?? 0, value));
      peak.rssTotal = Math.max(peak.rssTotal, total(rss));
      peak.pssTotal = Math.max(peak.pssTotal, total(pss));
      await sleep(250);
    }
  })();
  try {
    const uploaded = await upload(platform, key, path, 'bench sales.csv');
    log(`  uploaded ${(uploaded.bytes / 1e6).toFixed(1)} MB in ${uploaded.seconds.toFixed(1)} s`);
    const before = await snapshot(await processes());
    const started = await agentsCall(platform, key, '/sql/csv_to_db', {
      method: 'POST',
      body: JSON.stringify({ file_id: uploaded.id, table: 'bench_sales' }),
    });
    let last: Json = started;
    while (last.status !== 'completed') {
      if (last.status === 'failed') throw new Error(`the import failed: ${last.error}`);
      await sleep(500);
      last = await agentsCall(platform, key, `/sql/imports/${started.id}`);
    }
    const usage = usageBetween(before, await snapshot(await processes()));
    const count = await agentsCall(platform, key, '/sql/query', {
      method: 'POST',
      body: JSON.stringify({ sql: 'select count(*) as n from bench_sales' }),
    });
    const loaded = Number(count.rows[0][0]);
    if (loaded + Number(last.result.bad_rows) !== rows) {
      throw new Error(`the table has ${loaded} rows and ${last.result.bad_rows} bad ones, of ${rows} in the file`);
    }
    importRow = {
      fileBytes: uploaded.bytes,
      rows: loaded,
      badRows: Number(last.result.bad_rows),
      uploadSeconds: uploaded.seconds,
      importSeconds: (Date.parse(last.finished_at) - Date.parse(last.created_at)) / 1000,
      usage,
      baseline,
      peak,
      baselineTotals: { rss: total(baseline.rss), pss: total(baseline.pss) },
    };
    log(`  imported ${loaded} rows in ${importRow.importSeconds.toFixed(1)} s`);
  } finally {
    sampling = false;
    await sampler;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The two runs

async function makeFiles(): Promise<{ pdf: string; csv: string; bigCsv: string; bigRows: number }> {
  await rm(filesDir, { recursive: true, force: true });
  await mkdir(filesDir, { recursive: true });
  const pdf = join(filesDir, 'report.pdf');
  await writeFile(pdf, await reportPdf(sizes.pdfPages));
  const csv = join(filesDir, 'sales.csv');
  await writeSalesCsv(csv, sizes.csvRows, { wide: false });
  const bigCsv = join(filesDir, 'sales-wide.csv');
  const bigRows = await wideRowsFor(bigCsv, sizes.importBytes);
  await writeSalesCsv(bigCsv, bigRows, { wide: true });
  log(`files made in ${filesDir}`);
  return { pdf, csv, bigCsv, bigRows };
}

const pdfSource = () => `PDF, ${sizes.pdfPages} pages`;
const csvSource = () => `CSV, ${sizes.csvRows.toLocaleString('en')} rows`;

async function localRun(run: ShippedRun, files: Awaited<ReturnType<typeof makeFiles>>): Promise<void> {
  const { platform, databaseUrl } = run;
  const account = await createBenchAccount(platform);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  const engine = new LocalEmbeddingEngine();
  try {
    const engineName = 'local engine';
    for (const file of [
      { path: files.pdf, name: 'report.pdf', source: pdfSource() },
      { path: files.csv, name: 'sales.csv', source: csvSource() },
    ]) {
      log(`indexing ${file.source} (local engine)`);
      const row = await indexFile(platform, account.key, file, engineName);
      await settle(platform);
      row.direct = await directEngine(engine, await chunkTexts(pool, row.documentId, sizes.directTexts));
      indexRows.push(row);
    }
    // Search on the real index just built (both files' chunks), queries about its chunks.
    const { rows } = await pool.query<{ document_id: string }>(
      'select id as document_id from rag_documents where user_id = $1',
      [account.userId],
    );
    const samples = (await Promise.all(rows.map((row) => chunkTexts(pool, row.document_id, 25)))).flat();
    const random = seededRandom(41);
    const texts = samples.map((text) => questionAbout(random, text));
    const vectors = await engine.embed(texts);
    const queries = texts.map((text, index) => ({ text, vector: vectors[index]! }));
    await tableCounts(pool, 'local engine index', account.userId);
    await measureSearch(
      {
        platform,
        key: account.key,
        userId: account.userId,
        store: new RagStore(pool),
        model: localModel,
        queries,
        directEmbedding: {
          name: 'engine alone (direct, 1 text)',
          call: (text) => timed(async () => (await engine.embed([text]))[0]!.length === ragDimensions),
        },
      },
      'local engine index',
      1,
      sizes.localRequests,
    );
    log(`table import of ${(sizes.importBytes / 1e6).toFixed(0)} MB`);
    const importer = await createBenchAccount(platform);
    await measureImport(platform, importer.key, files.bigCsv, files.bigRows);
  } finally {
    engine.close();
    await pool.end();
  }
}

async function simulatedRun(run: ShippedRun, files: Awaited<ReturnType<typeof makeFiles>>): Promise<void> {
  const { platform, databaseUrl, upstream } = run;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 8 });
  try {
    const indexer = await createBenchAccount(platform);
    for (const file of [
      { path: files.pdf, name: 'report.pdf', source: pdfSource() },
      { path: files.csv, name: 'sales.csv', source: csvSource() },
    ]) {
      log(`indexing ${file.source} (simulated ${simulatedModel})`);
      indexRows.push(await indexFile(platform, indexer.key, file, `simulated ${simulatedModel}`));
    }

    const searcher = await createBenchAccount(platform);
    const selective = await createBenchAccount(platform);
    const searcherSeed = 1;
    log('seeding the index');
    await timedSeed(`${sizes.others} other accounts`, sizes.others * sizes.otherEach, async () => {
      for (let other = 0; other < sizes.others; other++) {
        await seed(pool, upstream.url, { userId: `bench_other_${other}`, count: sizes.otherEach, seed: 10 + other });
      }
    });
    await timedSeed('the small account', sizes.selective, () =>
      seed(pool, upstream.url, { userId: selective.userId, count: sizes.selective, seed: 3 }),
    );
    const setupFor = (queries: Query[], account: { key: string; userId: string }): SearchSetup => {
      const simulator: Target = { url: `${upstream.url}/v1/embeddings`, headers: { authorization: 'Bearer bench' } };
      return {
        platform,
        key: account.key,
        userId: account.userId,
        store: new RagStore(pool),
        model: simulatedModel,
        queries,
        dimensions: ragDimensions,
        directEmbedding: {
          name: 'simulator /v1/embeddings (direct)',
          call: (text) =>
            exchange('POST', simulator, {
              body: JSON.stringify({ model: simulatedModel, input: text, dimensions: ragDimensions }),
            }),
        },
      };
    };
    let seeded = 0;
    for (const stageSize of sizes.stages) {
      const stage = `${stageSize.toLocaleString('en')} chunks`;
      const from = seeded;
      await timedSeed(`the searching account, to ${stage}`, stageSize - from, () =>
        seed(pool, upstream.url, {
          userId: searcher.userId,
          count: stageSize - from,
          seed: searcherSeed * 1_000 + from,
        }),
      );
      seeded = stageSize;
      await pool.query('analyze rag_chunks');
      await pool.query('analyze rag_documents');
      await tableCounts(pool, stage, searcher.userId);
      if (stageSize === sizes.stages[0]) {
        await checkSeedMatches(platform, searcher.key, passages(searcherSeed * 1_000 * 100_003, 1, 1)[0]!);
      }
      // Queries about the passages of the whole stage (the earlier stages' seeds included).
      const queries = await stageQueries(upstream.url, searcherSeed, stageSize);
      for (const clients of [1, 4]) {
        await measureSearch(setupFor(queries, searcher), stage, clients, sizes.requests[clients]!);
      }
      await explainSearch(pool, stage, searcher.userId, simulatedModel, queries[0]!);
      await measureRecall(pool, stage, searcher.userId, simulatedModel, queries.slice(0, sizes.recallQueries));
    }
    const lastStage = `${sizes.stages.at(-1)!.toLocaleString('en')} chunks`;
    const selectiveStage = `a small account: ${sizes.selective.toLocaleString('en')} chunks, beside the ${lastStage}`;
    const selectiveQueries = await seededQueries(upstream.url, 3, sizes.selective, 100);
    await tableCounts(pool, selectiveStage, selective.userId);
    await measureSearch(setupFor(selectiveQueries, selective), selectiveStage, 1, sizes.requests[1]!);
    await explainSearch(pool, selectiveStage, selective.userId, simulatedModel, selectiveQueries[0]!);
    await measureRecall(
      pool,
      selectiveStage,
      selective.userId,
      simulatedModel,
      selectiveQueries.slice(0, sizes.recallQueries),
    );
  } finally {
    await pool.end();
  }
}

/**
 * Queries over a stage's passages: the searching account's passages were seeded stage by stage, each stage's with
 * its own seed, so a query picks a stage's seed in proportion to its share.
 */
async function stageQueries(simulatorUrl: string, searcherSeed: number, stageSize: number): Promise<Query[]> {
  const parts: Array<{ seed: number; count: number }> = [];
  let from = 0;
  for (const size of sizes.stages) {
    if (size > stageSize) break;
    parts.push({ seed: searcherSeed * 1_000 + from, count: size - from });
    from = size;
  }
  const queries: Query[] = [];
  for (const part of parts) {
    const share = Math.max(1, Math.round((200 * part.count) / stageSize));
    queries.push(...(await seededQueries(simulatorUrl, part.seed, part.count, share)));
  }
  // Interleaved, so every measured stretch mixes old and new passages.
  return queries.sort((a, b) => (a.text < b.text ? -1 : 1));
}

// ---------------------------------------------------------------------------------------------------------------
// The report

const shownRoles: Role[] = ['API', 'worker', 'Temporal', 'PostgreSQL'];
const rate = (value: number) => (Number.isFinite(value) ? (value >= 100 ? value.toFixed(0) : value.toFixed(1)) : 'n/a');
const seconds = (value: number) => value.toFixed(1);
/**
 * Cores busy outside the platform and the bench's process during a phase: the simulator, and whatever else ran on
 * the machine (a figure well above zero in the local run means other work shared the cores).
 */
const elsewhere = (usage: Usage) =>
  (Math.max(0, usage.machineCpu - total(usage.cpu) - usage.benchCpu) / usage.seconds).toFixed(2);
const signed = (value: number) => `${value < 0 ? '−' : '+'}${ms(Math.abs(value))}`;
/** CPU ms per unit by role (`API / worker / Temporal / PostgreSQL`) and the total over every process. */
const cpuCells = (usage: Usage, units: number, scale = 1000): [string, string] => [
  shownRoles.map((role) => ms(((usage.cpu.get(role) ?? 0) * scale) / Math.max(1, units))).join(' / '),
  ms((total(usage.cpu) * scale) / Math.max(1, units)),
];

function runsTable(): string {
  const lines = ['| run | load average before (1 / 5 / 15 min) | a jest run on the machine |', '|---|---|---|'];
  for (const note of runNotes) {
    lines.push(
      `| ${note.name} | ${note.loadBefore.map((value) => value.toFixed(2)).join(' / ')} | ${note.jestRunning ? '**yes**' : 'no'} |`,
    );
  }
  return lines.join('\n');
}

function indexTable(): string {
  const lines = [
    `| embedding | file | chunks | upload s | wall s | extraction s | embedding s | **chunks/s** | chunks/s while embedding | CPU ms per chunk: ${shownRoles.join(' / ')} | **CPU ms per chunk, all** | of it Node worker threads | engine alone: texts/s, CPU ms per text | **indexing ÷ engine alone**: speed (embedding phase) / CPU per chunk | cores busy elsewhere |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|',
  ];
  for (const row of indexRows) {
    const [byRole, all] = cpuCells(row.usage, row.chunks);
    const workerThreads = ms(((row.usage.threads.get('Node worker threads') ?? 0) * 1000) / row.chunks);
    const embedding = row.chunks / row.embedSeconds;
    const direct = row.direct
      ? `${rate(row.direct.texts / row.direct.seconds)}, ${ms((row.direct.cpuSeconds * 1000) / row.direct.texts)}`
      : '—';
    const ratio = row.direct
      ? `${((embedding / (row.direct.texts / row.direct.seconds)) * 100).toFixed(0)} % / ` +
        `${((total(row.usage.cpu) / row.chunks / (row.direct.cpuSeconds / row.direct.texts)) * 100).toFixed(0)} %`
      : '—';
    lines.push(
      `| ${row.engine} | ${row.source}, ${(row.fileBytes / 1e6).toFixed(1)} MB | ${row.chunks} | ${seconds(row.uploadSeconds)} | ` +
        `${seconds(row.wallSeconds)} | ${seconds(row.extractSeconds)} | ${seconds(row.embedSeconds)} | ` +
        `**${rate(row.chunks / row.wallSeconds)}** | ${rate(embedding)} | ${byRole} | **${all}** | ${workerThreads} | ${direct} | ${ratio} | ${elsewhere(row.usage)} |`,
    );
  }
  return lines.join('\n');
}

function searchTable(stage: string): string {
  const lines = [
    `| clients | arm | n | errors | p50 ms | p99 ms | **added p50 / p99** over the query | requests/s | CPU ms per request: ${shownRoles.join(' / ')} | CPU ms per request, all | cores busy elsewhere |`,
    '|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|',
  ];
  for (const row of searchRows.filter((candidate) => candidate.stage === stage)) {
    const base = searchRows.find((other) => other.stage === stage && other.clients === row.clients && other.isBase);
    const added =
      row.isBase || !base
        ? '—'
        : `**${signed(row.summary.p50 - base.summary.p50)} / ${signed(row.summary.p99 - base.summary.p99)}**`;
    const [byRole, all] = row.usage ? cpuCells(row.usage, row.summary.n) : ['—', '—'];
    lines.push(
      `| ${row.clients} | ${row.arm} | ${row.summary.n} | ${row.summary.errors} | ${ms(row.summary.p50)} | ` +
        `${ms(row.summary.p99)} | ${added} | ${rate(row.summary.perSecond)} | ${byRole} | ${all} | ` +
        `${row.usage ? elsewhere(row.usage) : '—'} |`,
    );
  }
  return lines.join('\n');
}

/** Where a search's time goes at one client: the query, the embedding through the platform, the rest. */
function breakdown(stage: string): string {
  const at = (arm: string) => searchRows.find((row) => row.stage === stage && row.clients === 1 && row.arm === arm);
  const query = at(armNames.query);
  const gateway = at(armNames.gateway);
  const search = at(armNames.search);
  const direct = searchRows.find(
    (row) =>
      row.stage === stage &&
      row.clients === 1 &&
      ![armNames.query, armNames.gateway, armNames.search].includes(row.arm),
  );
  if (!query || !gateway || !search || !direct) return '';
  const added = search.summary.p50 - query.summary.p50;
  const rest = added - gateway.summary.p50;
  return (
    `At 1 client (p50): the search ${ms(search.summary.p50)} ms, the direct query ${ms(query.summary.p50)} ms: the ` +
    `search adds **${ms(added)} ms** (aim ≤ 5 ms: ${added <= 5 ? '✅' : '❌'}). The query's embedding alone takes ` +
    `${ms(direct.summary.p50)} ms called directly (${direct.arm}) and ${ms(gateway.summary.p50)} ms through the ` +
    "platform's path (`POST /v1/embeddings`: HTTP and login, admission and credit hold, the embedding workflow, the " +
    'call, settlement; the search takes the same path without the HTTP). What the search adds beyond that embedding ' +
    `and the query is ${signed(rest)} ms: its own HTTP and login, the pool's connection and the answer's shaping ` +
    '(a figure within the noise of the others when near zero).'
  );
}

function recallTable(): string {
  const lines = [
    `| index | queries | **recall@${k}** (shipped: ef_search 100) | answers with fewer than ${k} rows | HNSW search p50 ms | with ef_search 200: recall, p50 ms | exact scan p50 ms |`,
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of recallRows) {
    lines.push(
      `| ${row.stage} | ${row.queries} | **${row.recall.toFixed(3)}** | ${row.short} | ${ms(row.hnswP50)} | ` +
        `${row.wideRecall.toFixed(3)}, ${ms(row.wideP50)} | ${ms(row.exactP50)} |`,
    );
  }
  return lines.join('\n');
}

function seedTable(): string {
  const lines = ['| seeded | chunks | s | chunks/s |', '|---|---:|---:|---:|'];
  for (const row of seedRows) {
    lines.push(`| ${row.label} | ${row.chunks} | ${seconds(row.seconds)} | ${rate(row.chunks / row.seconds)} |`);
  }
  lines.push('', '| index | chunks of the searching account | chunks in the table |', '|---|---:|---:|');
  for (const row of stageCounts) lines.push(`| ${row.stage} | ${row.user} | ${row.table} |`);
  return lines.join('\n');
}

function importTables(row: ImportRow): string {
  const [byRole, all] = cpuCells(row.usage, row.rows / 1000);
  const memoryRoles: Role[] = ['API', 'worker', 'Temporal', 'PostgreSQL'];
  const mib = (value: number | undefined) => (value ?? 0).toFixed(0);
  const lines = [
    `| file | rows | bad rows | upload s | import s | **rows/s** | MB/s | CPU ms per 1,000 rows: ${shownRoles.join(' / ')} | CPU ms per 1,000 rows, all | cores busy elsewhere |`,
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|',
    `| ${(row.fileBytes / 1e6).toFixed(1)} MB CSV, 8 columns | ${row.rows} | ${row.badRows} | ${seconds(row.uploadSeconds)} | ` +
      `${seconds(row.importSeconds)} | **${rate(row.rows / row.importSeconds)}** | ${(row.fileBytes / 1e6 / row.importSeconds).toFixed(2)} | ${byRole} | ${all} | ${elsewhere(row.usage)} |`,
    '',
    '| process | RSS idle MiB | **RSS peak MiB** | PSS idle MiB | PSS peak MiB |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const role of memoryRoles) {
    lines.push(
      `| ${role} | ${mib(row.baseline.rss.get(role))} | **${mib(row.peak.rss.get(role))}** | ${mib(row.baseline.pss.get(role))} | ${mib(row.peak.pss.get(role))} |`,
    );
  }
  lines.push(
    `| all (the sum's own peak) | ${mib(row.baselineTotals.rss)} | **${mib(row.peak.rssTotal)}** | ${mib(row.baselineTotals.pss)} | ${mib(row.peak.pssTotal)} |`,
  );
  return lines.join('\n');
}

async function writeReport(failure: string | undefined): Promise<void> {
  const stages = [...new Set(searchRows.map((row) => row.stage))];
  await writeResults(
    'rag-results.md',
    'Tessera RAG and files benchmark',
    [
      reportLead() +
        '`npm run bench:rag`. `npm start` as shipped (persistent Temporal dev server, embedded PostgreSQL with ' +
        'pgvector, the API with its in-process worker, the background worker) in its own processes, data directory ' +
        'and ports, twice: with the local embedding engine (`EMBEDDING_MODEL=local-embedding`, what `npm start` ' +
        'sets without a provider key) and with `text-embedding-3-small` played by the provider simulator (its own ' +
        'process). Files, load and direct calls from the bench process over node:http keep-alive (or `pg` for the ' +
        'direct query), everything on the same cores. Business accounts, metered (every embedding holds and ' +
        'settles credits). CPU: user + system seconds of every platform process between the start and the end of ' +
        "the phase, from /proc; **cores busy elsewhere**: the machine's CPU over the phase (/proc/stat) less the " +
        "platform's and the bench process's, in cores: the simulator, and any other work on the machine (well " +
        "above zero in the local run, or beyond the simulator's share in the simulated one, means other work " +
        'shared the cores). Times in ms unless marked.',
      '',
      runsTable(),
      '',
      '## Index throughput',
      '',
      'Each file uploaded (`POST /upload`, multipart, streamed from disk), then indexed (`POST /rag/index`), its ' +
        'status read every 200 ms until `done`: **wall** from the index request to `done` seen; **extraction** until ' +
        '`embedding` was first seen (reading the file and writing its chunks), **embedding** the rest (64 chunks a ' +
        'call through the embedding path, then the swap). **Engine alone**: the same engine in the bench process on ' +
        `${sizes.directTexts} of the index's own chunks (spread over it), 64 texts a call, and the bench process's ` +
        "CPU per text. **Indexing ÷ engine alone**: the index's chunks/s while embedding as a share of the " +
        "engine's texts/s alone (how close indexing comes to the engine's own speed; wall-clock, so other work " +
        "on the machine in either phase moves it), and the platform's CPU per chunk over the engine's CPU per " +
        'text (what indexing spends beyond the engine; CPU time, so it holds better on a shared machine).',
      '',
      indexRows.length ? indexTable() : 'Not measured (the run stopped before).',
      '',
      '## Search',
      '',
      `\`GET /rag/search?q=…&k=${k}\` from the bench process beside, in the same run and at the same concurrency: ` +
        "**pgvector query (direct)**: the store's own search (`RagStore.search`: a pooled connection, `BEGIN`, " +
        "the two `SET LOCAL`s, the statement, `COMMIT`) from the bench process with the query's vector computed " +
        'beforehand, the base of the "added" column; the query\'s embedding alone, directly (the engine in the bench ' +
        "process, or the simulator's endpoint); and `POST /v1/embeddings` on the gateway with the same model and " +
        'size (the embedding step through the platform: each call a durable workflow, see docs/gateway.md, ' +
        '"Embeddings"). ' +
        'Every arm cycles through the same queries (questions made of a few words of one chunk) and checks its ' +
        `answer (${k} results, a ${ragDimensions}-float vector). After a warm-up of each arm, the arms take ` +
        `turns: ${rounds} rounds, each arm running a ${rounds}th of its requests per round, in rotating order, so ` +
        "other work on the machine weighs on every arm alike. The CPU columns are the platform's processes " +
        "(for the direct query, PostgreSQL's work for it).",
      '',
      ...stages.flatMap((stage) => [`### ${stage}`, '', searchTable(stage), '', breakdown(stage), '']),
      '### Index sizes and seeding',
      '',
      'The simulated run seeds chunks straight into `rag_documents` and `rag_chunks` (documents of ' +
        `${sizes.perDocument} generated passages, each embedded by the simulator's \`/v1/embeddings\` with ` +
        `\`${simulatedModel}\` at ${ragDimensions} dimensions, exactly as the platform asks it, two documents at a ` +
        "time), then ANALYZEs both tables. The time is the simulator's embedding plus PostgreSQL inserting into the " +
        'HNSW index as rows arrive. The table also holds the indexed PDF and CSV of another account.',
      '',
      seedRows.length ? seedTable() : 'Not measured.',
      '',
      '### Recall of the HNSW search',
      '',
      "For the same queries: the store's statement under its settings (`hnsw.iterative_scan = relaxed_order`, " +
        "`hnsw.ef_search = 100`) against the same statement with `enable_indexscan = off` (the user's rows, by " +
        `their user_id index or a sequential scan, sorted by exact distance). Recall@${k}: the share of the exact ` +
        `${k} the HNSW search returned (a row as near as the exact ${k}th counts); beside it the same with ` +
        '`hnsw.ef_search = 200` (a wider search, for comparison: not what the platform runs). Times from the bench ' +
        'process, without the HTTP and embedding.',
      '',
      recallRows.length ? recallTable() : 'Not measured.',
      '',
      '### Query plans (EXPLAIN ANALYZE of the search statement, first query)',
      '',
      ...plans.flatMap(({ stage, plan }) => [`${stage}:`, '', '```text', plan, '```', '']),
      '## Table import',
      '',
      'A CSV of about ' +
        `${(sizes.importBytes / 1e6).toFixed(0)} MB (8 columns: integer, date, 2 texts, integer, numeric, boolean, ` +
        'a text empty in 70 % of rows) uploaded, then `POST /sql/csv_to_db` (two streamed passes: types, then ' +
        "`COPY`), followed with `GET /sql/imports/{id}` every 500 ms; **import s** is the import's own " +
        '`created_at` to `finished_at`; the rows are counted afterwards with `POST /sql/query`. Memory of the ' +
        "platform's processes sampled every 250 ms from the upload's start to the import's end, against the idle " +
        "platform just before: RSS, and PSS (shared pages divided among the processes mapping them, so PostgreSQL's " +
        'shared buffers count once, not once per backend). CPU over the import alone (not the upload).',
      '',
      importRow ? importTables(importRow) : 'Not measured (the run stopped before).',
      '',
      ...(failures.length ? ['**Errors:**', '', ...failures.map((line) => `- ${line}`), ''] : []),
      ...failureLines(failure),
    ],
    { startedAt, log },
  );
}

// ---------------------------------------------------------------------------------------------------------------

let failure: string | undefined;
let files: Awaited<ReturnType<typeof makeFiles>> | undefined;
try {
  files = await makeFiles();
} catch (error) {
  failure = `making the files: ${(error as Error).message}`;
}
if (files) {
  const made = files;
  noteRun('local engine (`EMBEDDING_MODEL=local-embedding`)');
  failure = await withShippedRun(
    { name: 'bench-rag-local', ports, environment: { EMBEDDING_MODEL: localModel }, log },
    (run) => localRun(run, made),
  );
  if (!failure) {
    noteRun(`simulated \`${simulatedModel}\``);
    failure = await withShippedRun({ name: 'bench-rag-simulated', ports, log }, (run) => simulatedRun(run, made));
  }
}
await writeReport(failure);
await rm(filesDir, { recursive: true, force: true });
endBench(failure || failures.length ? 1 : 0);
