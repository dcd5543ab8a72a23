/**
 * Regenerate, edit and branches through HTTP (docs/agent-service.md, "Regenerate, edit and branches"): a message sent
 * with `replaces_turn` stands in for that turn (a new answer to the same message, an edited message, or the message
 * asked of another agent); the earlier turn stays reachable as an alternative, `PUT /sessions/{id}/branch` shows it
 * again, and the history the model reads, the history page, the export and a share link all follow the branch the
 * conversation is on. A reopened chat's turns carry their agent, confidence and cost. A turn whose message carried
 * uploaded images (`image_file_id`, or up to four as `image_file_ids`) stores them: a turn standing in for it sends
 * them all to the model again (unless it brings an image of its own), the history names them in order, and once one
 * file is deleted such a message is a 404 that adds no turn. Bad `image_file_ids` (another user's file, not an image,
 * too many, with `image_file_id`) are refused, adding no turn. Another user's session or turn is a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { englishImage } from '../helpers/media-images.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';

let platform: TestPlatform;
let owner: string;
let stranger: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  owner = (await platform.createKey()).key;
  stranger = (await platform.createKey()).key;
}, 120_000);

afterAll(async () => {
  await platform?.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(path: string, key: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> {
  const response = await platform.agents(path, { ...init, key });
  return { status: response.status, body: (await response.json()) as Json };
}

/** A finished turn: its id. */
async function send(session: string, body: Json, key = owner): Promise<string> {
  const response = await platform.agents(`/chat/stream/${session}`, {
    method: 'POST',
    key,
    body: JSON.stringify({ preferred_agents: ['general'], ...body }),
  });
  expect(response.status).toBe(200);
  const turnId = response.headers.get('x-turn-id')!;
  const events = await readSse(response);
  expect(events.some((event) => (event.data as Json).type === 'cost')).toBe(true);
  return turnId;
}

/** What the model was sent on the last call: its user and assistant messages' texts. */
async function lastPrompt(): Promise<string[]> {
  const last = (await platform.simulator.requests()).last?.body as { messages: Json[] };
  return last.messages.filter((message) => message.role !== 'system').map((message) => textOf(message.content));
}

/** A message's text: its content, or the text parts of a content array (a message with an image). */
const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? (content as Json[])
        .filter((part) => part.type === 'text')
        .map((part) => String(part.text))
        .join('')
    : String(content);

/** The image parts (OpenAI `image_url`, Anthropic `image`) of the messages the model was sent on the last call. */
async function lastImages(): Promise<Json[]> {
  const last = (await platform.simulator.requests()).last?.body as { messages: Json[] };
  return last.messages
    .flatMap((message) => (Array.isArray(message.content) ? (message.content as Json[]) : []))
    .filter((part) => part.type === 'image_url' || part.type === 'image');
}

/** Uploads an image of the owner's (`POST /upload`): its id. */
async function uploadImage(name: string, text: string, key = owner): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([await englishImage(text)], { type: 'image/png' }), name);
  const response = await platform.agents('/upload', { method: 'POST', key, body: form });
  expect(response.status).toBe(201);
  return ((await response.json()) as Json).id as string;
}

/** The gateway's chat (`POST /api/v1/chat`), which also runs the linking commands `/link` and `/link CODE`. */
async function gatewayChat(body: Json): Promise<Json> {
  const response = await platform.fetch('/api/v1/chat', { method: 'POST', key: owner, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

const history = async (session: string) => (await call(`/history/${session}`, owner)).body;
const userTexts = (page: Json) =>
  (page.messages as Json[]).filter((message) => message.role === 'user').map((message) => message.content);

describe('replaces_turn and branches', () => {
  it('regenerates an answer as an alternative, charged as a turn, and pages back to the first one', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Name a colour' });
    const second = await send(session, { message: 'Name a fruit' });
    const usageBefore = (await call(`/usage/${session}`, owner)).body;

    const again = await send(session, { message: 'Name a fruit', replaces_turn: second });
    // The model read turn 1 and the message again, not the answer it is replacing.
    expect(await lastPrompt()).toEqual(['Name a colour', expect.any(String), 'Name a fruit']);

    const page = await history(session);
    expect(userTexts(page)).toEqual(['Name a colour', 'Name a fruit']);
    const turns = page.turns as Json[];
    expect(turns.map((turn) => turn.turn_id)).toEqual([first, again]);
    expect(turns[1]!.alternatives).toEqual([second, again]);
    expect(turns[0]!.alternatives).toEqual([first]);
    // A reopened chat names the agent, how sure the router was, and what each turn cost.
    expect(turns[1]).toMatchObject({
      status: 'done',
      attachment: null,
      agent: { id: 'general', name: expect.any(String), confidence: 1, method: 'preferred', model: expect.any(String) },
      cost: { credits: expect.any(Number), input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
    });
    expect(turns[1]!.cost.credits).toBeGreaterThan(0);
    // Charged like any other turn.
    const usageAfter = (await call(`/usage/${session}`, owner)).body;
    expect(usageAfter.turns).toBe(usageBefore.turns + 1);
    expect(usageAfter.credits).toBeGreaterThan(usageBefore.credits);

    // Back to the first answer: the history, and the next message's context, follow it.
    const switched = await call(`/sessions/${session}/branch`, owner, {
      method: 'PUT',
      body: JSON.stringify({ turn_id: second }),
    });
    expect(switched).toEqual({ status: 200, body: { session_id: session, turn_id: second } });
    expect(((await history(session)).turns as Json[]).map((turn) => turn.turn_id)).toEqual([first, second]);
    await send(session, { message: 'And a vegetable?' });
    const prompt = await lastPrompt();
    expect(prompt.filter((_, index) => index % 2 === 0)).toEqual(['Name a colour', 'Name a fruit', 'And a vegetable?']);
    expect(prompt).toHaveLength(5);
  });

  it('edits a message into a new branch; history, export and share show the branch the person is on', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Plan a trip to Oslo' });
    await send(session, { message: 'What should I pack?' });

    const edited = await send(session, { message: 'Plan a trip to Lisbon', replaces_turn: first });
    expect(await lastPrompt()).toEqual(['Plan a trip to Lisbon']);
    const page = await history(session);
    expect(userTexts(page)).toEqual(['Plan a trip to Lisbon']);
    expect(page.message_count).toBe(2);
    expect((page.turns as Json[])[0]!.alternatives).toEqual([first, edited]);

    const exported = (await call(`/export/${session}?format=json`, owner)).body;
    expect((exported.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Lisbon',
    ]);
    const link = (await call(`/share/${session}`, owner, { method: 'POST', body: '{}' })).body;
    const token = new URL(link.url as string).pathname.split('/').pop();

    // Back on the first branch: the export follows, the link keeps showing what was shared.
    await call(`/sessions/${session}/branch`, owner, { method: 'PUT', body: JSON.stringify({ turn_id: first }) });
    expect(userTexts(await history(session))).toEqual(['Plan a trip to Oslo', 'What should I pack?']);
    const exportedAgain = (await call(`/export/${session}?format=json`, owner)).body;
    expect((exportedAgain.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Oslo',
      'What should I pack?',
    ]);
    const shared = await platform.agents(`/s/${token}`, { headers: { accept: 'application/json' } });
    const sharedView = (await shared.json()) as Json;
    expect((sharedView.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Lisbon',
    ]);
  });

  it('asks the same message of another agent', async () => {
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Write a haiku about rain' });
    const other = await send(session, {
      message: 'Write a haiku about rain',
      replaces_turn: first,
      preferred_agents: ['writer'],
    });
    const turns = (await history(session)).turns as Json[];
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ turn_id: other, agent: { id: 'writer' }, alternatives: [first, other] });
  });

  it('keeps a chat’s branches when it is linked into another, and its share link showing what it showed', async () => {
    const target = `web:${randomUUID()}`;
    const hello = await send(target, { message: 'Hello from the other chat' });
    const session = `web:${randomUUID()}`;
    const first = await send(session, { message: 'Plan a trip to Oslo' });
    const second = await send(session, { message: 'What should I pack?' });
    const edited = await send(session, { message: 'Plan a trip to Lisbon', replaces_turn: first });
    const weather = await send(session, { message: 'And the weather?' });
    const link = (await call(`/share/${session}`, owner, { method: 'POST', body: '{}' })).body;
    const token = new URL(link.url as string).pathname.split('/').pop();

    // The other chat's /link code, sent in the branched one (the chat API runs linking commands): it joins the other.
    const issued = await gatewayChat({ message: '/link', session_id: target });
    const code = /\d{6}/.exec(issued.response as string)![0];
    expect((await gatewayChat({ message: `/link ${code}`, session_id: session })).response).toContain('Linked');

    // One conversation: the other chat's turn, then the branch the joining chat was on, its alternatives kept.
    for (const key of [session, target]) {
      const page = await history(key);
      expect(userTexts(page)).toEqual(['Hello from the other chat', 'Plan a trip to Lisbon', 'And the weather?']);
      const turns = page.turns as Json[];
      expect(turns.map((turn) => turn.turn_id)).toEqual([hello, edited, weather]);
      expect(turns[1]!.alternatives).toEqual([first, edited]);
    }
    // The branch it was not on is still there, and the model reads it once the chat is back on it.
    await call(`/sessions/${session}/branch`, owner, { method: 'PUT', body: JSON.stringify({ turn_id: second }) });
    expect(userTexts(await history(target))).toEqual([
      'Hello from the other chat',
      'Plan a trip to Oslo',
      'What should I pack?',
    ]);
    await send(session, { message: 'Anything else?' });
    expect((await lastPrompt()).filter((_, index) => index % 2 === 0)).toEqual([
      'Hello from the other chat',
      'Plan a trip to Oslo',
      'What should I pack?',
      'Anything else?',
    ]);
    // The link made before shows what was shared, not the other chat's turn.
    const shared = (await (
      await platform.agents(`/s/${token}`, { headers: { accept: 'application/json' } })
    ).json()) as Json;
    expect((shared.messages as Json[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Plan a trip to Lisbon',
      'And the weather?',
    ]);
  });

  it('sends a turn’s image again when it is regenerated, asked of another agent or edited; a new image replaces it', async () => {
    const session = `web:${randomUUID()}`;
    const imageId = await uploadImage('sign.png', 'OPEN');
    const first = await send(session, { message: 'What does this sign say?', image_file_id: imageId });
    expect(await lastImages()).toHaveLength(1);
    const attachment = { file_id: imageId, file_name: 'sign.png', content_type: 'image/png' };
    expect((await history(session)).turns).toEqual([expect.objectContaining({ turn_id: first, attachment })]);

    // Regenerate: the same text only, as the web app sends it; the model sees the image again.
    const again = await send(session, { message: 'What does this sign say?', replaces_turn: first });
    expect(await lastImages()).toHaveLength(1);
    expect(await lastPrompt()).toEqual(['What does this sign say?']);
    let page = await history(session);
    expect(page.turns).toEqual([expect.objectContaining({ turn_id: again, attachment, alternatives: [first, again] })]);
    expect((page.messages as Json[]).find((message) => message.role === 'assistant')?.content).toContain(
      '[saw 1 image(s)]',
    );

    // Another agent, and an edited message: the image stays with the message.
    const other = await send(session, {
      message: 'What does this sign say?',
      replaces_turn: again,
      preferred_agents: ['writer'],
    });
    expect(await lastImages()).toHaveLength(1);
    const edited = await send(session, { message: 'Read the sign aloud', replaces_turn: other });
    expect(await lastImages()).toHaveLength(1);
    page = await history(session);
    expect(page.turns).toEqual([
      expect.objectContaining({ turn_id: edited, attachment, alternatives: [first, again, other, edited] }),
    ]);

    // An image in the request replaces the turn's; an image sent inline is not stored.
    const otherImageId = await uploadImage('exit.png', 'EXIT');
    const replaced = await send(session, {
      message: 'And this one?',
      replaces_turn: edited,
      image_file_id: otherImageId,
    });
    expect(await lastImages()).toHaveLength(1);
    expect(((await history(session)).turns as Json[])[0]).toMatchObject({
      turn_id: replaced,
      attachment: { file_id: otherImageId, file_name: 'exit.png', content_type: 'image/png' },
    });
    const inline = await send(session, {
      message: 'And inline?',
      replaces_turn: replaced,
      image_data: (await englishImage('STOP')).toString('base64'),
    });
    expect(await lastImages()).toHaveLength(1);
    expect(((await history(session)).turns as Json[])[0]).toMatchObject({ turn_id: inline, attachment: null });
    // Regenerating that one sends no image: the inline image was not kept.
    await send(session, { message: 'And inline?', replaces_turn: inline });
    expect(await lastImages()).toHaveLength(0);

    // A later turn without an image names none.
    await send(session, { message: 'Thanks' });
    expect(((await history(session)).turns as Json[]).at(-1)).toMatchObject({ attachment: null });
  });

  it('sends several images (image_file_ids) to the model, names them in order, and sends them all again', async () => {
    const session = `web:${randomUUID()}`;
    const alpha = await uploadImage('alpha.png', 'ALPHA');
    const bravo = await uploadImage('bravo.png', 'BRAVO');
    const first = await send(session, { message: 'Compare these signs', image_file_ids: [alpha, bravo] });
    const seen = await lastImages();
    expect(seen).toHaveLength(2);
    expect(JSON.stringify(seen[0])).not.toBe(JSON.stringify(seen[1]));
    const attachments = [
      { file_id: alpha, file_name: 'alpha.png', content_type: 'image/png' },
      { file_id: bravo, file_name: 'bravo.png', content_type: 'image/png' },
    ];
    expect((await history(session)).turns).toEqual([
      expect.objectContaining({ turn_id: first, attachments, attachment: attachments[0] }),
    ]);

    // Regenerate (the text only, as the web app sends it): both images again, in the same order.
    const again = await send(session, { message: 'Compare these signs', replaces_turn: first });
    expect(await lastImages()).toEqual(seen);
    let page = await history(session);
    expect(page.turns).toEqual([
      expect.objectContaining({
        turn_id: again,
        attachments,
        attachment: attachments[0],
        alternatives: [first, again],
      }),
    ]);
    expect((page.messages as Json[]).find((message) => message.role === 'assistant')?.content).toContain(
      '[saw 2 image(s)]',
    );

    // The agent loop takes them too; a turn of one image (`image_file_id`) lists that one.
    const loop = await platform.agents(`/chat/loop/${session}`, {
      method: 'POST',
      key: owner,
      body: JSON.stringify({ message: 'Again, as a loop', image_file_ids: [bravo, alpha], max_iterations: 1 }),
    });
    expect(loop.status).toBe(200);
    await readSse(loop);
    expect(await lastImages()).toHaveLength(2);
    await send(session, { message: 'Just this one', image_file_id: alpha });
    page = await history(session);
    expect((page.turns as Json[]).map((turn) => turn.attachments)).toEqual([
      attachments,
      [attachments[1], attachments[0]],
      [attachments[0]],
    ]);

    // One of them deleted: the history leaves it out, and standing in for the turn is a 404 that adds no turn.
    expect((await platform.agents(`/upload/${bravo}`, { method: 'DELETE', key: owner })).status).toBe(200);
    page = await history(session);
    expect((page.turns as Json[])[0]).toMatchObject({ attachments: [attachments[0]], attachment: attachments[0] });
    const refused = await call(`/chat/stream/${session}`, owner, {
      method: 'POST',
      body: JSON.stringify({ message: 'Compare these signs', replaces_turn: again, preferred_agents: ['general'] }),
    });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toMatchObject({ type: 'not_found', param: 'replaces_turn' });
    expect(refused.body.error.message).toMatch(new RegExp(`image file ${bravo} of turn ${again} is gone`));
    expect(await history(session)).toEqual(page);
  });

  it('refuses bad image_file_ids (not the caller’s, not an image, malformed, too many, with image_file_id, no room left beside image_data), adding no turn', async () => {
    const session = `web:${randomUUID()}`;
    await send(session, { message: 'Hello' });
    const mine = await uploadImage('mine.png', 'MINE');
    const theirs = await uploadImage('theirs.png', 'THEIRS', stranger);
    const form = new FormData();
    form.append('file', new Blob(['bird,wingspan_cm\npelican,300\n'], { type: 'text/csv' }), 'birds.csv');
    const uploaded = await platform.agents('/upload', { method: 'POST', key: owner, body: form });
    expect(uploaded.status).toBe(201);
    const csv = ((await uploaded.json()) as Json).id as string;
    const before = await history(session);
    const requests = (await platform.simulator.requests()).total;

    const cases: Array<{ body: Json; status: number; type: string; message: RegExp }> = [
      {
        body: { image_file_ids: [mine, theirs] },
        status: 404,
        type: 'not_found',
        message: new RegExp(`No file ${theirs}`),
      },
      {
        body: { image_file_ids: [mine, 'file_000000000000000000000000'] },
        status: 404,
        type: 'not_found',
        message: /No file file_0{24}/,
      },
      { body: { image_file_ids: [mine, csv] }, status: 400, type: 'invalid_request', message: /is csv, not an image/ },
      { body: { image_file_ids: [mine, 'nope'] }, status: 400, type: 'invalid_request', message: /must be a file id/ },
      { body: { image_file_ids: [mine, mine] }, status: 400, type: 'invalid_request', message: /twice/ },
      { body: { image_file_ids: [] }, status: 400, type: 'invalid_request', message: /at least one/ },
      {
        body: { image_file_ids: [mine, theirs, csv, 'file_000000000000000000000000', 'file_000000000000000000000001'] },
        status: 400,
        type: 'invalid_request',
        message: /at most 4 images/,
      },
      {
        body: { image_file_ids: [mine], image_file_id: mine },
        status: 400,
        type: 'invalid_request',
        message: /either image_file_id or image_file_ids, not both/,
      },
    ];
    for (const path of [`/chat/stream/${session}`, `/chat/loop/${session}`]) {
      for (const { body, status, type, message } of cases) {
        const refused = await call(path, owner, {
          method: 'POST',
          body: JSON.stringify({ message: 'Look', preferred_agents: ['general'], ...body }),
        });
        expect({ path, body, status: refused.status }).toEqual({ path, body, status });
        expect(refused.body.error).toMatchObject({ type });
        expect(refused.body.error.param).toMatch(/^image_file_ids/);
        expect(refused.body.error.message).toMatch(message);
      }
    }
    // An inline image that takes nearly all the room the images share (998,392 of 1,000,000 characters: a stored PNG's
    // size does not depend on its pixels) leaves too little even for the small uploaded one (1,924 at its smallest).
    const noise = await sharp(randomBytes(499 * 499 * 3), { raw: { width: 499, height: 499, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    const inline = noise.toString('base64');
    expect(inline.length).toBe(998_392);
    for (const path of [`/chat/stream/${session}`, `/chat/loop/${session}`]) {
      const refused = await call(path, owner, {
        method: 'POST',
        body: JSON.stringify({ message: 'Look', image_data: inline, image_file_ids: [mine] }),
      });
      expect({ path, status: refused.status }).toEqual({ path, status: 400 });
      expect(refused.body.error).toMatchObject({ type: 'invalid_request', param: 'image_data' });
      expect(refused.body.error.message).toMatch(/image_data leaves too little room for image_file_ids/);
    }
    // Nothing changed: no model call, the same turns.
    expect((await platform.simulator.requests()).total).toBe(requests);
    expect(await history(session)).toEqual(before);
    await send(session, { message: 'Still here' });
    expect(((await history(session)).turns as Json[]).map((turn) => turn.number)).toEqual([1, 2]);
  });

  it('refuses to stand in for a turn whose image file was deleted, adding no turn', async () => {
    const session = `web:${randomUUID()}`;
    const imageId = await uploadImage('gone.png', 'GONE');
    const first = await send(session, { message: 'Describe this', image_file_id: imageId });
    const deleted = await platform.agents(`/upload/${imageId}`, { method: 'DELETE', key: owner });
    expect(deleted.status).toBe(200);
    // The history no longer names the file (its name went with it).
    const before = await history(session);
    expect(before.turns).toEqual([expect.objectContaining({ turn_id: first, attachment: null })]);

    const requests = (await platform.simulator.requests()).total;
    for (const path of [`/chat/stream/${session}`, `/chat/loop/${session}`]) {
      const refused = await call(path, owner, {
        method: 'POST',
        body: JSON.stringify({ message: 'Describe this', replaces_turn: first, preferred_agents: ['general'] }),
      });
      expect({ path, status: refused.status }).toEqual({ path, status: 404 });
      expect(refused.body.error).toMatchObject({ type: 'not_found', param: 'replaces_turn' });
      expect(refused.body.error.message).toMatch(new RegExp(`image file ${imageId} of turn ${first} is gone`));
    }
    // Nothing changed: no model call, the same turns, and the next turn is the conversation's second.
    expect((await platform.simulator.requests()).total).toBe(requests);
    expect(await history(session)).toEqual(before);

    // With an image of its own, the message stands in for the turn.
    const newImageId = await uploadImage('again.png', 'AGAIN');
    const replaced = await send(session, {
      message: 'Describe this',
      replaces_turn: first,
      image_file_id: newImageId,
    });
    expect(replaced).toBe(first.replace(/-1$/, '-2'));
    expect(await lastImages()).toHaveLength(1);
  });

  it('refuses another user’s turn or session, a turn of another session, and bad ids, changing nothing', async () => {
    const session = `web:${randomUUID()}`;
    const turn = await send(session, { message: 'Hello there', image_file_id: await uploadImage('mine.png', 'MINE') });
    const otherSession = `web:${randomUUID()}`;
    await send(otherSession, { message: 'Another chat' });

    const post = (key: string, path: string, body: Json) =>
      call(path, key, { method: 'POST', body: JSON.stringify({ preferred_agents: ['general'], ...body }) });
    // The stranger's session of the same name holds no such turn (nor does the owner's image reach the stranger's turn).
    const foreign = await post(stranger, `/chat/stream/${session}`, { message: 'x', replaces_turn: turn });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({
      param: 'replaces_turn',
      message: `No turn ${turn} in session ${session}`,
    });
    expect((await post(owner, `/chat/stream/${otherSession}`, { message: 'x', replaces_turn: turn })).status).toBe(404);
    const bad = await post(owner, `/chat/stream/${session}`, { message: 'x', replaces_turn: 'turn-1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param ?? bad.body.error.message).toMatch(/replaces_turn/);

    const put = (key: string, path: string, body: Json) =>
      call(path, key, { method: 'PUT', body: JSON.stringify(body) });
    expect((await put(stranger, `/sessions/${session}/branch`, { turn_id: turn })).status).toBe(404);
    expect((await put(owner, `/sessions/${otherSession}/branch`, { turn_id: turn })).status).toBe(404);
    expect((await put(owner, `/sessions/${session}/branch`, { turn_id: 'nope' })).status).toBe(400);
    expect((await put(owner, `/sessions/${session}/branch`, {})).status).toBe(400);

    const page = await history(session);
    expect(userTexts(page)).toEqual(['Hello there']);
    expect((page.turns as Json[]).map((item) => item.alternatives)).toEqual([[turn]]);
  });
});
