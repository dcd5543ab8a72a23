/**
 * The Files API through the official `openai` SDK's `files` methods, unmodified: upload a JSONL file of requests
 * (`purpose: batch`), list, retrieve, read its content back, delete; each refused file names its first line at fault
 * and keeps nothing; another user's file is a 404 on every route.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import OpenAI, { toFile } from 'openai';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let client: OpenAI;

beforeAll(async () => {
  platform = await startTestPlatform();
  client = platform.openai((await platform.createKey()).key, { maxRetries: 0 });
});

afterAll(async () => {
  await platform?.close();
});

const line = (customId: string, content: string, url = '/v1/chat/completions') =>
  JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] },
  });

const upload = async (text: string, name = 'requests.jsonl') =>
  client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });

describe('files', () => {
  it('takes a JSONL file of requests, lists it, reads it back and deletes it', async () => {
    const text = `${[line('a', 'First'), line('b', 'Second'), line('c', 'Third')].join('\n')}\n`;
    const file = await upload(text);
    expect(file).toMatchObject({
      object: 'file',
      bytes: Buffer.byteLength(text),
      filename: 'requests.jsonl',
      purpose: 'batch',
      status: 'processed',
    });
    expect(file.id).toMatch(/^file-/);

    expect(await client.files.retrieve(file.id)).toEqual(file);
    const listed = await client.files.list({ purpose: 'batch' });
    expect(listed.data.map((entry) => entry.id)).toContain(file.id);
    expect(await (await client.files.content(file.id)).text()).toBe(text);

    const second = await upload(line('d', 'Fourth'), 'second.jsonl');
    const newestFirst = await client.files.list({ limit: 1 });
    expect(newestFirst.data.map((entry) => entry.id)).toEqual([second.id]);
    expect(newestFirst.has_more).toBe(true);

    expect(await client.files.delete(file.id)).toMatchObject({ id: file.id, deleted: true });
    expect(await client.files.retrieve(file.id).catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it.each([
    ['a line that is not JSON', `${line('a', 'x')}\n{not json`, 'Line 2: is not JSON'],
    ['a repeated custom_id', `${line('a', 'x')}\n${line('a', 'y')}`, 'Line 2: custom_id a is used on an earlier line'],
    ['an endpoint batches do not serve', line('a', 'x', '/v1/images/generations'), 'Line 1: url must be one of'],
    ['an empty line', `${line('a', 'x')}\n\n${line('b', 'y')}`, 'Line 2: is empty'],
    ['an empty file', '', 'The file is empty'],
  ])('refuses %s, naming it, and keeps nothing', async (_, text, message) => {
    const before = (await client.files.list()).data.length;
    const error = (await upload(text).catch((caught: unknown) => caught)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toContain(message);
    expect((await client.files.list()).data.length).toBe(before);
  });

  it('refuses another purpose', async () => {
    const error = await client.files
      .create({ file: await toFile(Buffer.from(line('a', 'x')), 'a.jsonl'), purpose: 'fine-tune' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('answers 404 for another user’s file on every route', async () => {
    const mine = await upload(line('a', 'Mine'));
    const stranger = platform.openai((await platform.createKey(`stranger-${Date.now()}@example.com`)).key, {
      maxRetries: 0,
    });
    const refused = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: unknown) => error,
      );
    expect(await refused(stranger.files.retrieve(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refused(stranger.files.content(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refused(stranger.files.delete(mine.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await stranger.files.list()).data).toEqual([]);
    expect(await client.files.retrieve(mine.id)).toMatchObject({ id: mine.id });
  });
});
