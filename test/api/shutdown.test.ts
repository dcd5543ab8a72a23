/** Draining: once the gateway starts closing, open streams still finish and new requests are refused. */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;
let closed = false;

beforeAll(async () => {
  platform = await startTestPlatform();
});

afterAll(async () => {
  if (!closed) await platform.close();
});

it('lets an open stream finish, then refuses new connections', async () => {
  const { key } = await platform.createKey();
  // The stream pauses for a second after two tokens, long enough to begin shutting down mid-stream.
  await platform.simulator.addFault({
    match: { model: 'gpt-4o-mini-2024-07-18' },
    fault: { stall_after_tokens: 2, stall_ms: 1000 },
  });
  const stream = await platform.openai(key).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'A long answer please' }],
    stream: true,
  });
  const chunks: string[] = [];
  let finish: string | null = null;
  const reading = (async () => {
    for await (const chunk of stream) {
      chunks.push(chunk.choices[0]?.delta.content ?? '');
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
  })();
  while (chunks.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));

  const closing = platform.close();
  closed = true;
  await new Promise((resolve) => setTimeout(resolve, 100));
  await expect(fetch(`${platform.gateway.url}/health`)).rejects.toThrow();
  await reading;
  await closing;
  expect(finish).toBe('stop');
  expect(chunks.join('')).toMatch(/\w+ \w+ \w+/);
});
