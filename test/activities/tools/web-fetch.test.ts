/**
 * `web_fetch` run the way the chat turn runs it (`runTool` with the model's JSON arguments) against the simulator's
 * pages on loopback, which the settings allow as tests and benches do. A trap server on loopback that is not allowed
 * counts connections, to prove a refused fetch reached nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runTool, toolJsonSchema } from '../../../activities/tools/runtime.ts';
import { ToolError } from '../../../activities/tools/tool.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { webFetchTool, type WebFetchResult } from '../../../activities/tools/web-fetch.ts';
import { startSimulator, type RunningSimulator } from '../../../simulator/server.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';

let simulator: RunningSimulator;
let trap: Server;
let trapPort: number;
let trapConnections = 0;
let settings: ToolSettings;

beforeAll(async () => {
  simulator = await startSimulator();
  trap = createServer((_request, response) => response.end('internal secret'));
  trap.on('connection', () => (trapConnections += 1));
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  trapPort = (trap.address() as AddressInfo).port;
  settings = testToolSettings({ fetchAllowedHosts: [`127.0.0.1:${simulator.port}`] });
});

afterAll(async () => {
  trap.closeAllConnections();
  await new Promise((resolve) => trap.close(resolve));
  await simulator.close();
});

function fetchPage(args: Record<string, unknown>, tool = webFetchTool) {
  return runTool(tool, JSON.stringify(args), { conversationId: 'conversation-web-fetch', settings });
}

async function pageOf(args: Record<string, unknown>): Promise<WebFetchResult> {
  const outcome = await fetchPage(args);
  expect(outcome.ok).toBe(true);
  return JSON.parse(outcome.content) as WebFetchResult;
}

describe('web_fetch', () => {
  it('offers the model a URL and an optional character limit, and is always configured', () => {
    const schema = toolJsonSchema(webFetchTool) as { properties: Record<string, { description?: string }> };
    expect(Object.keys(schema.properties)).toEqual(['url', 'max_chars']);
    expect(schema.properties.url?.description).toMatch(/http or https URL/);
    expect(schema).toMatchObject({ required: ['url'] });
    expect(webFetchTool.configured(settings)).toBe(true);
    expect(webFetchTool.retry).toEqual({ maximumAttempts: 2, initialIntervalMs: 500 });
  });

  it('returns the article as Markdown with its title, without the nav, header and footer', async () => {
    const page = await pageOf({ url: `${simulator.url}/pages/article` });
    expect(page.url).toBe(`${simulator.url}/pages/article`);
    expect(page.title).toBe('Durable Execution, Explained');
    expect(page.content).toMatch(/^## State in a history\n\nDurable execution keeps the state/);
    expect(page.content).toContain('\n## Retries and timers\n');
    expect(page.content).toMatch(/\n- +Activities are retried under a policy\.\n- +Timers survive restarts\.\n/);
    expect(page.content).toContain('a café owner reading the trace');
    // Relative links come back absolute.
    expect(page.content).toContain(`[the notes on determinism](${simulator.url}/pages/determinism)`);
    for (const chrome of ['NAVIGATION', 'BANNER', 'FOOTER', 'Privacy']) expect(page.content).not.toContain(chrome);
  });

  it('follows redirects and reports the URL it ended at', async () => {
    const page = await pageOf({ url: `${simulator.url}/pages/redirect?to=/pages/article` });
    expect(page.url).toBe(`${simulator.url}/pages/article`);
    expect(page.title).toBe('Durable Execution, Explained');
  });

  it('returns plain text as it is', async () => {
    const page = await pageOf({ url: `${simulator.url}/pages/plain` });
    expect(page).toEqual({
      url: `${simulator.url}/pages/plain`,
      title: null,
      content: 'Plain text page.\nLine two of the plain text page.\n',
    });
  });

  it('falls back to the body text when readability finds no article', async () => {
    const page = await pageOf({ url: `${simulator.url}/pages/unreadable` });
    expect(page).toEqual({
      url: `${simulator.url}/pages/unreadable`,
      title: 'Loading',
      content: 'Only hidden text: the page fills itself in with a script.',
    });
  });

  it('cuts the content at max_chars, with a note', async () => {
    const whole = await pageOf({ url: `${simulator.url}/pages/article` });
    const page = await pageOf({ url: `${simulator.url}/pages/article`, max_chars: 60 });
    expect(page.content).toBe(`${whole.content.slice(0, 60)}\n… (cut: ${whole.content.length - 60} more characters)`);
  });

  it('keeps a long page within the output cap as whole JSON', async () => {
    const outcome = await fetchPage({ url: `${simulator.url}/pages/large?bytes=200000` });
    expect(outcome.ok).toBe(true);
    expect(outcome.content.length).toBeLessThanOrEqual(webFetchTool.maxOutputChars);
    const page = JSON.parse(outcome.content) as WebFetchResult;
    expect(page.content).toMatch(/^Filler paragraph of the large page\./);
    expect(page.content).toMatch(/… \(cut: \d+ more characters\)$/);
  });

  it.each([
    [
      'loopback not allowed',
      () => `http://127.0.0.1:${trapPort}/`,
      /127\.0\.0\.1 is not a public address \(loopback\)/,
    ],
    [
      'a redirect to loopback',
      () => `${simulator.url}/pages/redirect?to=${encodeURIComponent(`http://127.0.0.1:${trapPort}/`)}`,
      /refused http:\/\/127\.0\.0\.1:\d+\/ \(redirected from .*\): 127\.0\.0\.1 is not a public address/,
    ],
    [
      'the metadata address',
      () => 'http://169.254.169.254/latest/meta-data/',
      /not a public address \(cloud metadata\)/,
    ],
    ['a file URL', () => 'file:///etc/passwd', /only http and https URLs may be fetched/],
    ['a binary file', () => `${simulator.url}/pages/binary`, /is application\/octet-stream, not one of the types/],
    ['a page over 5 MiB', () => `${simulator.url}/pages/large?bytes=6000000`, /is larger than the 5 MiB/],
    ['a missing page', () => `${simulator.url}/pages/status?code=404`, /answered with HTTP status 404$/],
  ])('tells the model when it refuses %s, and fetches nothing', async (_case, url, message) => {
    const outcome = await fetchPage({ url: url() });
    expect(outcome.ok).toBe(false);
    expect(outcome.content).toMatch(/^web_fetch: /);
    expect(outcome.content).toMatch(message);
    expect(trapConnections).toBe(0);
  });

  it('rejects a URL that is not one before fetching', async () => {
    const outcome = await fetchPage({ url: 'not a url' });
    expect(outcome).toEqual({ ok: false, content: expect.stringMatching(/^web_fetch: invalid arguments \(url: /) });
  });

  it('throws a retryable error for a server error, for the retry policy', async () => {
    const error = await fetchPage({ url: `${simulator.url}/pages/status?code=503` }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).retryable).toBe(true);
    expect((error as ToolError).message).toMatch(/answered with HTTP status 503$/);
  });

  it('throws a retryable error when the page is too slow', async () => {
    const impatient = { ...webFetchTool, timeoutMs: 300 };
    const started = Date.now();
    const error = await fetchPage({ url: `${simulator.url}/pages/slow?ms=10000` }, impatient).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
