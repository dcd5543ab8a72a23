/**
 * Images in user messages through the gateway: an `image_url` part reaches the model over each wire protocol (the
 * simulator acknowledges what it saw), and a model without the `vision` capability is refused before any call.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let key: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  key = (await platform.createKey()).key;
}, 300_000);

afterAll(async () => {
  await platform?.close();
});

// A 1×1 transparent PNG.
const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const imageMessage = {
  role: 'user',
  content: [
    { type: 'text', text: 'Describe this picture' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}`, detail: 'high' } },
  ],
};

async function complete(body: Record<string, unknown>) {
  const response = await platform.fetch('/v1/chat/completions', { method: 'POST', key, body: JSON.stringify(body) });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('images in chat completions', () => {
  it.each([
    ['gpt-4o-mini', 'gpt-4o-mini-2024-07-18'],
    ['claude-haiku-4-5', 'claude-haiku-4-5-20251001'],
    ['gemini-2.5-flash', 'gemini-2.5-flash'],
  ])('carries the image to %s, which sees it', async (model, upstream) => {
    const { status, body } = await complete({ model, messages: [imageMessage] });
    expect(status).toBe(200);
    expect(body.choices[0].message.content).toBe(
      `Simulated reply from ${upstream} to: Describe this picture [saw 1 image(s)]`,
    );
    // Each image counts 765 prompt tokens in estimates; the simulator reports its own count.
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('streams an answer to a message with images', async () => {
    const stream = await platform.openai(key).chat.completions.create({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Two pictures' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
            { type: 'image_url', image_url: { url: 'https://images.example.com/a.jpg' } },
          ],
        },
      ],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Simulated reply from gpt-4o-mini-2024-07-18 to: Two pictures [saw 2 image(s)]');
  });

  it('refuses images for a model without vision, and malformed image parts', async () => {
    await platform.simulator.resetRequests();
    const refused = await complete({ model: 'deepseek-chat', messages: [imageMessage] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request', param: 'messages' });
    expect(refused.body.error.message).toContain('vision');
    expect((await platform.simulator.requests()).total).toBe(0);

    const badUrl = await complete({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://example.com/a.png' } }] }],
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error.type).toBe('invalid_request');
    const imageInSystem = await complete({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: imageMessage.content },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(imageInSystem.status).toBe(400);
  });
});
