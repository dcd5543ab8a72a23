/**
 * Media files on both stores, the local disk and an S3-compatible server on loopback (gofakes3, built with the Go
 * toolchain on first use): names, content types, results apart from inputs, whole reads, deletes, and expiry judged
 * by a settable clock: an expired file is not served although still stored, and the sweep deletes expired files only.
 * No Temporal, no database.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalMediaStore, MediaFiles, type MediaStore } from '../../../activities/media/files.ts';
import { S3MediaStore } from '../../../activities/media/s3-store.ts';
import { createMediaFiles } from '../../../activities/media/storage.ts';
import { readSettings } from '../../../config/settings.ts';
import type { RunningS3Server } from '../../../scripts/lib/s3-server.ts';
import { s3ServerStartTimeoutMs, s3Settings, startTestS3Server, testBucket } from '../../helpers/s3-server.ts';

let server: RunningS3Server;
let directory: string;
beforeAll(async () => {
  server = await startTestS3Server();
  directory = await mkdtemp(join(tmpdir(), 'tessera-media-files-'));
}, s3ServerStartTimeoutMs);
afterAll(async () => {
  await server?.stop();
  await rm(directory, { recursive: true, force: true });
});

const ttlMs = 60 * 60_000;
const bytes = (...values: number[]) => new Uint8Array(values);

async function collect(store: MediaStore, folder: string) {
  const listed: Array<{ key: string; storedAt: Date }> = [];
  for await (const entry of store.list(folder)) listed.push(entry);
  return listed;
}

const stores: Array<[string, () => MediaStore]> = [
  ['local disk', () => new LocalMediaStore(join(directory, `store-${Math.random().toString(36).slice(2)}`))],
  [
    'S3-compatible bucket',
    () =>
      new S3MediaStore({
        bucket: testBucket,
        endpoint: server.url,
        region: 'us-east-1',
        accessKeyId: 'tessera-test',
        secretAccessKey: 'tessera-test-secret',
        forcePathStyle: true,
        prefix: `run-${Math.random().toString(36).slice(2)}/`,
      }),
  ],
];

describe.each(stores)('media files on the %s', (_label, makeStore) => {
  it('stores results and inputs apart under unguessable names, and serves, reads and deletes them', async () => {
    const store = makeStore();
    const files = new MediaFiles(store, { ttlMs });
    const result = await files.save(bytes(1, 2, 3), 'audio/mpeg');
    const input = await files.save(bytes(4, 5), 'image/png; charset=binary', { kind: 'input' });
    expect(result).toMatch(/^[A-Za-z0-9_-]{43}\.mp3$/);
    expect(input).toMatch(/^input-[A-Za-z0-9_-]{43}\.png$/);
    expect((await collect(store, 'results')).map((entry) => entry.key)).toEqual([`results/${result}`]);
    expect((await collect(store, 'inputs')).map((entry) => entry.key)).toEqual([`inputs/${input}`]);

    const opened = await files.open(result);
    expect(opened).toMatchObject({ size: 3, contentType: 'audio/mpeg' });
    const chunks: Buffer[] = [];
    for await (const chunk of opened!.stream) chunks.push(chunk as Buffer);
    expect([...Buffer.concat(chunks)]).toEqual([1, 2, 3]);
    expect(opened!.expiresAt.getTime() - Date.now()).toBeGreaterThan(ttlMs - 5_000);
    expect(await files.read(input)).toEqual(bytes(4, 5));

    // Unknown, malformed and path-like names are absent; unknown types are refused.
    expect(await files.open(`${'A'.repeat(43)}.mp3`)).toBeNull();
    expect(await files.read(`input-${'A'.repeat(43)}.png`)).toBeNull();
    expect(await files.open(`../${result}`)).toBeNull();
    expect(await files.open(result.replace('.mp3', '.exe'))).toBeNull();
    await expect(files.save(bytes(1), 'text/html')).rejects.toThrow('not stored');

    await files.delete(input);
    expect(await files.read(input)).toBeNull();
    await files.delete(input); // deleting twice is fine
    expect(await files.read(result)).toEqual(bytes(1, 2, 3));
  });

  it('stops serving a file once it expired, before any sweep, and the sweep deletes expired files only', async () => {
    const store = makeStore();
    let now = new Date();
    const files = new MediaFiles(store, { ttlMs, now: () => now });
    const older = await files.save(bytes(7), 'video/mp4');
    const olderInput = await files.save(bytes(8), 'image/jpeg', { kind: 'input' });
    // Times are whole seconds on some stores (HTTP dates): the newer file is stored a second later.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const newer = await files.save(bytes(9), 'audio/wav');
    const listed = [...(await collect(store, 'results')), ...(await collect(store, 'inputs'))];
    const stored = (name: string) => listed.find((entry) => entry.key.endsWith(`/${name}`))!.storedAt.getTime();

    now = new Date(Math.max(stored(older), stored(olderInput)) + ttlMs);
    expect(await files.open(older)).toBeNull();
    expect(await files.read(olderInput)).toBeNull();
    expect(await files.read(newer)).toEqual(bytes(9));
    // Still stored: only the rule hides it.
    expect(await store.get(`results/${older}`)).not.toBeNull();

    expect((await files.sweep()).sort()).toEqual([older, olderInput].sort());
    expect(await store.get(`results/${older}`)).toBeNull();
    expect(await store.get(`inputs/${olderInput}`)).toBeNull();
    expect(await files.read(newer)).toEqual(bytes(9));
    expect(await files.sweep()).toEqual([]);

    now = new Date(Date.now() + ttlMs + 60_000);
    expect(await files.sweep()).toEqual([newer]);
    expect(await collect(store, 'results')).toEqual([]);
  });
});

describe('the local disk', () => {
  it('sweeps leftovers of interrupted writes once they are old, and nothing outside its folders', async () => {
    const root = join(directory, 'leftovers');
    const files = new MediaFiles(root, { ttlMs });
    const kept = await files.save(bytes(1), 'image/webp');
    const partial = join(root, 'results', `.${'B'.repeat(43)}.mp3.partial`);
    await writeFile(partial, 'half');
    const past = new Date(Date.now() - 2 * ttlMs);
    await utimes(partial, past, past);
    await mkdir(join(root, 'other'), { recursive: true });
    await writeFile(join(root, 'other', 'note.txt'), 'not media');
    await utimes(join(root, 'other', 'note.txt'), past, past);

    expect(await files.sweep()).toEqual([`.${'B'.repeat(43)}.mp3.partial`]);
    expect(await readdir(join(root, 'results'))).toEqual([kept]);
    expect(await readdir(join(root, 'other'))).toEqual(['note.txt']);
  });
});

describe('createMediaFiles', () => {
  it('picks the store from the settings, with the TTL in days', async () => {
    const base = { DATABASE_URL: 'postgres://x', MEDIA_DIR: directory, MEDIA_FILE_TTL_DAYS: '0.5' };
    const local = createMediaFiles(readSettings(base));
    expect(local.store).toBeInstanceOf(LocalMediaStore);
    expect(local.ttlMs).toBe(12 * 60 * 60_000);
    const s3 = createMediaFiles(readSettings({ ...base, ...s3Settings(server.url) }));
    // The bucket's store imports the S3 SDK at its first call (activities/media/storage.ts): it is the bucket it names.
    expect(s3.store).not.toBeInstanceOf(LocalMediaStore);
    expect(s3.store.description).toBe(`S3 bucket ${testBucket} at ${server.url}`);
    await s3.store.put('picked/one.txt', new TextEncoder().encode('stored'), 'text/plain');
    const stored = await s3.store.get('picked/one.txt');
    stored?.stream.destroy();
    expect(stored?.size).toBe(6);
    await s3.store.delete('picked/one.txt');
    expect(() =>
      createMediaFiles(readSettings({ ...base, MEDIA_S3_BUCKET: 'b', MEDIA_S3_ACCESS_KEY_ID: 'only-the-id' })),
    ).toThrow('MEDIA_S3_SECRET_ACCESS_KEY');
  });
});
