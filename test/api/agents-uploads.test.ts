/**
 * Uploads (spec §4.9): files made in the test (a PDF, an xlsx, a CSV, a PNG) through multipart and base64 JSON, the
 * type decided from the bytes (a lying name or declared type changes nothing; a ZIP, plain text or an executable is a
 * 415 naming what it is), the size limit and the account's quota (413 with the limit, nothing kept), metadata and
 * bytes back, listing, deletion, and another user's file answered as one that does not exist on every route.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { csvOf, pdfWith, xlsxWith } from '../helpers/documents.ts';
import { englishImage } from '../helpers/media-images.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let key: string;
let otherKey: string;
let database: pg.Pool;

const maxFileBytes = 400_000;
const quotaBytes = 1_000_000;

beforeAll(async () => {
  platform = await startTestPlatform({
    UPLOAD_MAX_BYTES: String(maxFileBytes),
    UPLOAD_QUOTA_BYTES: String(quotaBytes),
  });
  key = (await platform.createKey()).key;
  otherKey = (await platform.createKey()).key;
  database = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
});

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function upload(bytes: Uint8Array, fileName: string, options: { as?: string; type?: string } = {}) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: options.type ?? 'application/octet-stream' }), fileName);
  const response = await platform.agents('/upload', { method: 'POST', key: options.as ?? key, body: form });
  return { status: response.status, body: (await response.json()) as Json };
}

async function get(path: string, as = key, headers: Record<string, string> = {}) {
  return platform.agents(path, { key: as, headers });
}

describe('uploading', () => {
  it('takes a PDF, an xlsx, a CSV and a PNG, each typed by its bytes, and gives them back', async () => {
    const files = [
      { bytes: await pdfWith(['First page.', 'Second page.']), name: 'report.pdf', kind: 'pdf' },
      {
        bytes: await xlsxWith([
          ['region', 'sales'],
          ['north', 10],
        ]),
        name: 'sales.xlsx',
        kind: 'xlsx',
      },
      {
        bytes: Buffer.from(
          csvOf([
            ['a', 'b'],
            [1, 2],
          ]),
        ),
        name: 'numbers.csv',
        kind: 'csv',
      },
      { bytes: await englishImage('hello'), name: 'hello.png', kind: 'png' },
    ];
    for (const file of files) {
      const { status, body } = await upload(file.bytes, file.name);
      expect({ name: file.name, status }).toEqual({ name: file.name, status: 201 });
      expect(body).toMatchObject({
        id: expect.stringMatching(/^file_[A-Za-z0-9_-]{24}$/),
        object: 'file',
        file_name: file.name,
        kind: file.kind,
        bytes: file.bytes.length,
        sha256: sha256(file.bytes),
      });
      const metadata = await get(`/upload/${body.id}`);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toMatchObject({ id: body.id, kind: file.kind });
      const download = await get(`/upload/${body.id}?download=1`);
      expect(download.status).toBe(200);
      // A CSV is UTF-8 (checked when it was taken), which the header says.
      expect(download.headers.get('content-type')!.split(';')[0]).toBe(body.content_type);
      expect(download.headers.get('content-disposition')).toBe(
        `attachment; filename="${file.name}"; filename*=UTF-8''${file.name}`,
      );
      expect(download.headers.get('x-content-type-options')).toBe('nosniff');
      expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(sha256(file.bytes));
      // Asking for the file's own type gets the bytes too.
      const byAccept = await get(`/upload/${body.id}`, key, { accept: body.content_type });
      expect(byAccept.headers.get('content-type')!.split(';')[0]).toBe(body.content_type);
      await byAccept.arrayBuffer();
    }
  });

  it('decides the type from the bytes: a lying name or declared type changes nothing', async () => {
    const pdf = await pdfWith(['Not a picture.']);
    const { status, body } = await upload(pdf, 'photo.png', { type: 'image/png' });
    expect(status).toBe(201);
    expect(body).toMatchObject({ kind: 'pdf', content_type: 'application/pdf', file_name: 'photo.png' });
  });

  it('refuses other types with a 415 naming what the file is, and keeps nothing', async () => {
    const zip = Buffer.from('504b0304140000000000000000000000000000000000000000000000000000', 'hex');
    const cases: Array<[Uint8Array, string, RegExp]> = [
      [Buffer.concat([zip, Buffer.alloc(100)]), 'data.csv', /zip/i],
      [
        Buffer.from('MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00' + '\x00'.repeat(200), 'latin1'),
        'a.pdf',
        /exe|dos|binary/i,
      ],
      [Buffer.from('Just a sentence of prose.\nAnd another one.\n'), 'notes.csv', /one column|not CSV/],
      [Buffer.from('a,b,c\n1,2\n3,4,5,6\n'), 'ragged.csv', /different numbers of fields|Invalid Record Length/],
      [Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x00, 0x42]), 'weird.csv', /unknown type/],
    ];
    const before = await database.query('select count(*) from uploads');
    for (const [bytes, name, pattern] of cases) {
      const { status, body } = await upload(bytes, name);
      expect({ name, status }).toEqual({ name, status: 415 });
      expect(body.error).toMatchObject({ type: 'unsupported_media_type', param: 'file' });
      expect(body.error.message).toMatch(pattern);
    }
    expect((await database.query('select count(*) from uploads')).rows).toEqual(before.rows);
  });

  it('refuses a file over the size limit and uploads past the quota with a 413 naming the limit', async () => {
    const big = Buffer.from(csvOf(Array.from({ length: 40_000 }, (_, index) => [index, `row ${index}`])));
    expect(big.length).toBeGreaterThan(maxFileBytes);
    const tooBig = await upload(big, 'big.csv');
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error).toMatchObject({ type: 'payload_too_large', param: 'file' });
    expect(tooBig.body.error.message).toContain('390.6 KiB');

    // A fresh account fills its quota with files under the size limit; the one that would pass it is refused.
    const { key: quotaKey } = await platform.createKey();
    const part = Buffer.from(csvOf(Array.from({ length: 20_000 }, (_, index) => [index, 'x'.repeat(5)])));
    expect(part.length).toBeLessThan(maxFileBytes);
    let taken = 0;
    for (;;) {
      const { status, body } = await upload(part, 'part.csv', { as: quotaKey });
      if (status !== 201) {
        expect(status).toBe(413);
        expect(body.error.message).toMatch(/quota of 976.6 KiB/);
        break;
      }
      taken += part.length;
    }
    expect(taken + part.length).toBeGreaterThan(quotaBytes);
    const listed = (await (await get('/upload', quotaKey)).json()) as Json;
    expect(listed.used_bytes).toBe(taken);
    expect(listed.quota_bytes).toBe(quotaBytes);
    // The newest n files, or (limit=0) the quota's figures alone; the same figures either way.
    const newest = (await (await get('/upload?limit=2', quotaKey)).json()) as Json;
    expect(newest.files.map((file: Json) => file.id)).toEqual(listed.files.slice(0, 2).map((file: Json) => file.id));
    expect(await (await get('/upload?limit=0', quotaKey)).json()).toEqual({ ...listed, files: [] });
    for (const query of ['limit=-1', 'limit=1001', 'limit=two', 'page=2']) {
      const refused = await get(`/upload?${query}`, quotaKey);
      expect({ query, status: refused.status }).toEqual({ query, status: 400 });
      expect(((await refused.json()) as Json).error.type).toBe('invalid_request');
    }
  });

  it('takes base64 JSON for API clients, and keeps only the name of a path', async () => {
    const csv = Buffer.from(
      csvOf([
        ['city', 'people'],
        ['Lyon', 520_000],
      ]),
    );
    const response = await platform.agents('/upload', {
      method: 'POST',
      key,
      body: JSON.stringify({ file_name: '../../etc/cities.csv', content_base64: csv.toString('base64') }),
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ file_name: 'cities.csv', kind: 'csv', bytes: csv.length });
    const bad = await platform.agents('/upload', {
      method: 'POST',
      key,
      body: JSON.stringify({ file_name: 'x.csv', content_base64: '***' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error.param).toBe('content_base64');
  });
});

describe('attaching', () => {
  it('sends an uploaded image to the turn’s vision model, and refuses other files and other users’ images', async () => {
    const { body: image } = await upload(await englishImage('look'), 'look.png');
    const { body: pdf } = await upload(await pdfWith(['Words.']), 'words.pdf');
    const chat = (imageFileId: string, as = key) =>
      platform.agents(`/chat/stream/web:${randomUUID()}`, {
        method: 'POST',
        key: as,
        body: JSON.stringify({
          message: 'What is in this picture?',
          image_file_id: imageFileId,
          preferred_agents: ['general'],
        }),
      });
    const seen = await chat(image.id);
    expect(seen.status).toBe(200);
    const tokens = (await readSse(seen))
      .map((event) => event.data as Json)
      .filter((event) => event?.type === 'token')
      .map((event) => event.text)
      .join('');
    expect(tokens).toContain('[saw 1 image(s)]');
    const notAnImage = await chat(pdf.id);
    expect(notAnImage.status).toBe(400);
    expect(((await notAnImage.json()) as Json).error.param).toBe('image_file_id');
    expect((await chat(image.id, otherKey)).status).toBe(404);
  });
});

describe('owning', () => {
  it('lists the caller’s files only, deletes them, and answers another user’s as not found everywhere', async () => {
    const { body: mine } = await upload(
      Buffer.from(
        csvOf([
          ['k', 'v'],
          ['a', 1],
        ]),
      ),
      'mine.csv',
    );
    const listed = (await (await get('/upload')).json()) as Json;
    expect(listed.files.map((file: Json) => file.id)).toContain(mine.id);
    const theirs = (await (await get('/upload', otherKey)).json()) as Json;
    expect(theirs.files.map((file: Json) => file.id)).not.toContain(mine.id);

    for (const path of [`/upload/${mine.id}`, `/upload/${mine.id}?download=1`]) {
      const response = await get(path, otherKey);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(((await response.json()) as Json).error.type).toBe('not_found');
    }
    const stolen = await platform.agents(`/upload/${mine.id}`, { method: 'DELETE', key: otherKey });
    expect(stolen.status).toBe(404);
    expect((await get(`/upload/${mine.id}`)).status).toBe(200);

    const deleted = await platform.agents(`/upload/${mine.id}`, { method: 'DELETE', key });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ id: mine.id, object: 'file', deleted: true });
    expect((await get(`/upload/${mine.id}`)).status).toBe(404);
    expect((await platform.agents(`/upload/${mine.id}`, { method: 'DELETE', key })).status).toBe(404);
    // Malformed ids name no file.
    expect((await get('/upload/file_nope')).status).toBe(404);
  });

  it('needs a login', async () => {
    expect((await platform.agents('/upload')).status).toBe(401);
    expect((await platform.agents('/upload', { method: 'POST', body: '{}' })).status).toBe(401);
  });
});
