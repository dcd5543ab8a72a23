/**
 * RAG through HTTP (spec §4.9): files made in the test are uploaded, indexed by the durable `ragIndex` workflow
 * (progress, status) and searched: a PDF whose page 3 holds the answer, a CSV (row ranges), an xlsx, a text. Search
 * ranks by vector similarity (the simulator's embeddings bring texts sharing words closer) and names each chunk's
 * file, title and location; it never returns another user's chunk; an empty index answers an empty list. Indexing a
 * file again replaces its chunks; deleting the file removes them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import pg from 'pg';
import { callDirective as call } from '../helpers/agents.ts';
import { csvOf, pdfWith, xlsxWith } from '../helpers/documents.ts';
import { englishImage } from '../helpers/media-images.ts';
import { readSse } from '../helpers/sse.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let key: string;
let userId: string;
let otherKey: string;
let database: pg.Pool;

beforeAll(async () => {
  platform = await startTestPlatform();
  ({ key, user_id: userId } = await platform.createKey());
  otherKey = (await platform.createKey()).key;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const filler = (topic: string) =>
  `This page describes ${topic}. It contains general remarks about the project schedule, the budget and the team. ` +
  'Meetings take place every Monday morning in the main office. Reports are shared by e-mail with every member.';

const contractPages = [
  filler('the parties'),
  filler('the services'),
  'Termination. Either party may terminate this agreement with ninety days written notice of termination. ' +
    'After termination the supplier returns every document it received.',
  filler('the fees'),
];

async function upload(bytes: Uint8Array, fileName: string, as = key): Promise<Json> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), fileName);
  const response = await platform.agents('/upload', { method: 'POST', key: as, body: form });
  expect(response.status).toBe(201);
  return (await response.json()) as Json;
}

async function index(body: Json, as = key): Promise<Json> {
  const response = await platform.agents('/rag/index', { method: 'POST', key: as, body: JSON.stringify(body) });
  expect(response.status).toBe(202);
  return (await response.json()) as Json;
}

async function indexed(id: string, as = key): Promise<Json> {
  return waitFor(
    `index ${id} to end`,
    async () => {
      const body = (await (await platform.agents(`/rag/index/${id}`, { key: as })).json()) as Json;
      return (body.status === 'done' || body.status === 'failed') && body;
    },
    60_000,
  );
}

async function search(query: string, options: { k?: number; fileId?: string; as?: string } = {}): Promise<Json[]> {
  const parameters = new URLSearchParams({ q: query, ...(options.k ? { k: String(options.k) } : {}) });
  if (options.fileId) parameters.set('file_id', options.fileId);
  const response = await platform.agents(`/rag/search?${parameters}`, { key: options.as ?? key });
  expect(response.status).toBe(200);
  return ((await response.json()) as Json).results as Json[];
}

describe('indexing and search', () => {
  it('answers from the right page of a PDF, with its location', async () => {
    const file = await upload(await pdfWith(contractPages), 'contract.pdf');
    const started = await index({ file_id: file.id });
    expect(started).toMatchObject({
      id: expect.stringMatching(/^idx_/),
      object: 'rag.index',
      status: 'queued',
      file_id: file.id,
      title: 'contract.pdf',
      workflow_id: `rag-index-${started.id}`,
    });
    const done = await indexed(started.id);
    expect(done.status).toBe('done');
    expect(done.progress.chunks_total).toBeGreaterThanOrEqual(4);
    expect(done.progress.chunks_done).toBe(done.progress.chunks_total);

    const hits = await search('What does the agreement say about termination notice?', { k: 3 });
    expect(hits[0]).toMatchObject({
      file_id: file.id,
      title: 'contract.pdf',
      index_id: started.id,
      location: { kind: 'page', page: 3 },
    });
    expect(hits[0]!.text).toContain('ninety days written notice');
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);

    // The file listing shows its index.
    const listed = (await (await platform.agents(`/upload/${file.id}`, { key })).json()) as Json;
    expect(listed.index).toMatchObject({ id: started.id, status: 'done' });
  });

  it('indexes a CSV and an xlsx as rows with their header, and a text', async () => {
    const rows = [['region', 'product', 'sales']];
    for (let index = 0; index < 60; index++) rows.push([`region ${index % 5}`, `widget ${index}`, String(index * 10)]);
    rows.push(['antarctica', 'penguin umbrellas', '9999']);
    const csv = await upload(Buffer.from(csvOf(rows)), 'sales.csv');
    const workbook = await upload(
      await xlsxWith([
        ['city', 'mayor'],
        ['Lyon', 'Grégory Doucet'],
        ['Marseille', 'Benoît Payan'],
      ]),
      'mayors.xlsx',
    );
    const text = await index({ title: 'Tea notes', text: 'Green tea is steeped at eighty degrees for two minutes.' });
    const [csvIndex, workbookIndex] = [await index({ file_id: csv.id }), await index({ file_id: workbook.id })];
    for (const id of [csvIndex.id, workbookIndex.id, text.id]) expect((await indexed(id)).status).toBe('done');

    const penguin = await search('penguin umbrellas antarctica', { fileId: csv.id, k: 1 });
    expect(penguin[0]!.text).toContain('product: penguin umbrellas');
    expect(penguin[0]!.location).toMatchObject({ kind: 'rows' });
    const [first, last] = penguin[0]!.location.rows as [number, number];
    expect(first).toBeLessThanOrEqual(62);
    expect(last).toBe(62);

    const mayor = await search('Who is the mayor of Marseille?', { fileId: workbook.id, k: 1 });
    expect(mayor[0]!.text).toContain('city: Marseille; mayor: Benoît Payan');
    expect(mayor[0]!.location).toMatchObject({ kind: 'rows', sheet: 'Sheet1' });

    const tea = await search('how long to steep green tea', { k: 1 });
    expect(tea[0]).toMatchObject({ title: 'Tea notes', file_id: null, location: { kind: 'text' } });
  });

  it('replaces a file’s chunks when it is indexed again, and removes them with the file', async () => {
    const file = await upload(await pdfWith(['Saffron is the dried stigma of a crocus flower.']), 'saffron.pdf');
    const first = await indexed((await index({ file_id: file.id })).id);
    const second = await indexed((await index({ file_id: file.id })).id);
    expect([first.status, second.status]).toEqual(['done', 'done']);
    const { rows } = await database.query<{ document_id: string; count: string }>(
      'select document_id, count(*) from rag_chunks where file_id = $1 group by document_id',
      [file.id],
    );
    expect(rows.map((row) => row.document_id)).toEqual([second.id]);
    expect((await platform.agents(`/rag/index/${first.id}`, { key })).status).toBe(404);
    expect((await search('saffron crocus', { fileId: file.id }))[0]!.index_id).toBe(second.id);

    expect((await platform.agents(`/upload/${file.id}`, { method: 'DELETE', key })).status).toBe(200);
    const left = await database.query('select count(*) from rag_chunks where file_id = $1', [file.id]);
    expect(Number(left.rows[0]!.count)).toBe(0);
    expect((await search('saffron crocus')).every((hit) => hit.file_id !== file.id)).toBe(true);
  });

  it('indexes an image’s text (OCR)', async () => {
    const image = await upload(await englishImage('Invoice total 4200 euros'), 'invoice.png');
    const done = await indexed((await index({ file_id: image.id })).id);
    expect(done.status).toBe('done');
    const hits = await search('invoice total', { fileId: image.id, k: 1 });
    expect(hits[0]).toMatchObject({ file_id: image.id, location: { kind: 'image' } });
    expect(hits[0]!.text).toMatch(/Invoice total 4200 euros/i);
  });

  it('fails an index with no text to find, saying why', async () => {
    const blank = await upload(await pdfWith(['', '']), 'blank.pdf');
    const failed = await indexed((await index({ file_id: blank.id })).id);
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringMatching(/No text was found/) });
  });
});

describe('agents', () => {
  it('answer from a document through rag_search, and read it through with read_upload', async () => {
    const file = await upload(await pdfWith(contractPages), 'services-contract.pdf');
    await indexed((await index({ file_id: file.id })).id);
    const ask = async (message: string) => {
      const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
        method: 'POST',
        key,
        body: JSON.stringify({ message, preferred_agents: ['general'] }),
      });
      expect(response.status).toBe(200);
      return (await readSse(response)).map((event) => event.data as Json);
    };
    const events = await ask(
      `What does the contract say about termination? ${call('rag_search', { query: 'termination notice', k: 2, file_id: file.id })}`,
    );
    const result = events.find((event) => event?.type === 'tool' && event.status === 'done');
    expect(result).toMatchObject({ tool: 'rag_search', ok: true });
    const found = result!.result as Json;
    expect(found.results[0]).toMatchObject({ file_id: file.id, location: { kind: 'page', page: 3 } });
    const answer = events
      .filter((event) => event?.type === 'token')
      .map((event) => event.text)
      .join('');
    expect(answer).toContain('ninety days written notice');

    const read = await ask(`Read the contract. ${call('read_upload', { file_id: file.id, from: 3 })}`);
    const page = read.find((event) => event?.type === 'tool' && event.status === 'done');
    const content = page!.result as Json;
    expect(content).toMatchObject({ file_name: 'services-contract.pdf', kind: 'pdf', from: 3, next: null });
    expect(content.text).toContain('[page 3]');
    expect(content.text).toContain('[page 4]');
  });
});

describe('owning', () => {
  it('never returns another user’s chunks, and answers their files and indexes as not found', async () => {
    const secret = await upload(await pdfWith(['The vault combination is seven four one nine.']), 'vault.pdf');
    const secretIndex = await indexed((await index({ file_id: secret.id })).id);
    // Another user, with an empty index, searching for exactly that: nothing.
    expect(await search('vault combination seven four one nine', { as: otherKey })).toEqual([]);
    // Theirs does not mix with mine either way.
    const theirs = await upload(await pdfWith(['Our vault is painted green.']), 'theirs.pdf', otherKey);
    await indexed((await index({ file_id: theirs.id }, otherKey)).id, otherKey);
    const mine = await search('vault', { k: 10 });
    expect(mine.every((hit) => hit.file_id !== theirs.id)).toBe(true);
    const other = await search('vault', { k: 10, as: otherKey });
    expect(other.map((hit) => hit.file_id)).toEqual([theirs.id]);

    expect((await platform.agents(`/rag/index/${secretIndex.id}`, { key: otherKey })).status).toBe(404);
    const indexTheirs = await platform.agents('/rag/index', {
      method: 'POST',
      key: otherKey,
      body: JSON.stringify({ file_id: secret.id }),
    });
    expect(indexTheirs.status).toBe(404);
    const narrowed = await platform.agents(`/rag/search?q=vault&file_id=${secret.id}`, { key: otherKey });
    expect(narrowed.status).toBe(404);
  });

  it('bills a search for its query’s embedding, settled within the request, with no workflow of its own', async () => {
    await indexed((await index({ text: 'Lighthouses guide ships along the rocky coast.', title: 'Coast' })).id);
    const settled = async () =>
      (
        await database.query<{ workflow_id: string; amount: number; prompt_tokens: number }>(
          `select workflow_id, amount, prompt_tokens from credit_ledger
            where user_id = $1 and kind = 'settle' and workflow_id like 'embedding-%' order by id`,
          [userId],
        )
      ).rows;
    const before = await settled();
    const hits = await search('lighthouses along the coast', { k: 3 });
    expect(hits[0]).toMatchObject({ title: 'Coast' });
    // Settled before the answer: the new row is there as soon as the search has answered.
    const after = await settled();
    expect(after).toHaveLength(before.length + 1);
    const query = after.at(-1)!;
    expect(query.prompt_tokens).toBeGreaterThan(0);
    const { rows: holds } = await database.query('select 1 from credit_holds where workflow_id = $1', [
      query.workflow_id,
    ]);
    expect(holds).toEqual([]);
    // The query's embedding ran inside the search: Temporal has no workflow of that id (indexing's embeddings do).
    const connection = await Connection.connect({ address: platform.environment.TEMPORAL_ADDRESS! });
    try {
      const client = new Client({ connection });
      await expect(client.workflow.getHandle(query.workflow_id).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
      // The index's own embedding, just before, was a workflow.
      await expect(client.workflow.getHandle(before.at(-1)!.workflow_id).describe()).resolves.toBeDefined();
    } finally {
      await connection.close();
    }
  });

  it('refuses bad requests, naming the field', async () => {
    const bad = async (body: Json, param: string) => {
      const response = await platform.agents('/rag/index', { method: 'POST', key, body: JSON.stringify(body) });
      expect(response.status).toBe(400);
      expect(((await response.json()) as Json).error.param).toBe(param);
    };
    await bad({}, 'file_id');
    await bad({ text: 'no title' }, 'title');
    await bad({ file_id: 'nope' }, 'file_id');
    const noQuery = await platform.agents('/rag/search?q=', { key });
    expect(noQuery.status).toBe(400);
    expect((await platform.agents('/rag/search?q=x')).status).toBe(401);
  });
});
