/**
 * `web_search` end to end through `runTool` against the simulator's SearXNG, Brave Search and Tavily: the engine the
 * settings choose, the results' shape, refused keys, upstream failures and slowness, and bad arguments.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runTool, toolJsonSchema } from '../../../activities/tools/runtime.ts';
import { ToolError } from '../../../activities/tools/tool.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { webSearchTool } from '../../../activities/tools/web-search.ts';
import { startSimulator, type RunningSimulator } from '../../../simulator/server.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';
import { simulatedSearchKeys } from '../../../simulator/services/search.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(async () => {
  await simulator.close();
});

/** Settings with no engine configured; each test adds the one it means. */
function settings(overrides: Partial<ToolSettings> = {}): ToolSettings {
  return testToolSettings(overrides, simulator.url);
}

const searxng = () => ({ searxngUrl: `${simulator.url}/searxng` });
const brave = (key: string = simulatedSearchKeys.brave) => ({ braveSearchApiKey: key });
const tavily = (key: string = simulatedSearchKeys.tavily) => ({ tavilyApiKey: key });

function search(args: unknown, overrides: Partial<ToolSettings>, tool = webSearchTool) {
  return runTool(tool, JSON.stringify(args), { conversationId: 'conversation-1', settings: settings(overrides) });
}

interface SearchOutput {
  query: string;
  engine: string;
  results: Array<{ title: string; url: string; snippet: string }>;
}

async function results(args: unknown, overrides: Partial<ToolSettings>): Promise<SearchOutput> {
  const outcome = await search(args, overrides);
  expect(outcome.ok).toBe(true);
  return JSON.parse(outcome.content) as SearchOutput;
}

describe('web_search engines', () => {
  it('searches SearXNG when SEARXNG_URL is set: five results by default, each title, URL and snippet', async () => {
    const output = await results({ query: 'temporal workflows' }, searxng());
    expect(output.engine).toBe('searxng');
    expect(output.query).toBe('temporal workflows');
    expect(output.results).toHaveLength(5);
    expect(output.results[0]).toEqual({
      title: 'temporal workflows - simulated result 1',
      url: 'https://example.com/temporal-workflows/1',
      snippet: 'Simulated page 1 about temporal workflows.',
    });
    expect((await results({ query: 'temporal workflows', count: 3 }, searxng())).results).toHaveLength(3);
  });

  it('searches Brave with its key when no SearXNG is set, and strips the highlight markup from snippets', async () => {
    const output = await results({ query: 'durable <execution>', count: 2 }, brave());
    expect(output.engine).toBe('brave');
    expect(output.results).toHaveLength(2);
    expect(output.results[1]).toEqual({
      title: 'durable <execution> - simulated result 2',
      url: 'https://example.com/durable-execution/2',
      snippet: 'Simulated page 2 about durable <execution> & more.',
    });
  });

  it('searches Tavily with its key when neither SearXNG nor Brave is set', async () => {
    const output = await results({ query: 'koa', count: 4 }, tavily());
    expect(output.engine).toBe('tavily');
    expect(output.results.map((result) => result.url)).toEqual([1, 2, 3, 4].map((n) => `https://example.com/koa/${n}`));
  });

  it('prefers the self-hosted SearXNG, then Brave, over Tavily', async () => {
    expect((await results({ query: 'q' }, { ...searxng(), ...brave(), ...tavily() })).engine).toBe('searxng');
    expect((await results({ query: 'q' }, { ...brave(), ...tavily() })).engine).toBe('brave');
  });

  it('is not configured, and so not offered, without an engine', async () => {
    expect(webSearchTool.configured(settings())).toBe(false);
    expect(webSearchTool.configured(settings({ searxngUrl: '', braveSearchApiKey: ' ' }))).toBe(false);
    expect(webSearchTool.configured(settings(searxng()))).toBe(true);
    expect(webSearchTool.configured(settings(brave()))).toBe(true);
    expect(webSearchTool.configured(settings(tavily()))).toBe(true);
    expect(await search({ query: 'q' }, {})).toEqual({
      ok: false,
      content: 'web_search: no search engine is configured',
    });
  });
});

describe('web_search failures', () => {
  it('reports a refused key without retrying, naming the setting to check', async () => {
    expect(await search({ query: 'q' }, brave('not-the-key'))).toEqual({
      ok: false,
      content: 'web_search: Brave Search refused the API key (HTTP 422); check BRAVE_SEARCH_API_KEY',
    });
    expect(await search({ query: 'q' }, tavily('tvly-wrong'))).toEqual({
      ok: false,
      content: 'web_search: Tavily refused the API key (HTTP 401); check TAVILY_API_KEY',
    });
  });

  it('explains a SearXNG that does not allow the JSON format', async () => {
    const outcome = await search({ query: 'q' }, { searxngUrl: `${simulator.url}/searxng/_status/403` });
    expect(outcome).toEqual({
      ok: false,
      content: expect.stringContaining(
        'SearXNG refused the request (HTTP 403): the instance must allow the json format',
      ),
    });
  });

  it('makes an upstream 5xx or 429 a retryable error', async () => {
    const serverError = search({ query: 'q' }, { searxngUrl: `${simulator.url}/searxng/_status/500` });
    await expect(serverError).rejects.toThrow(ToolError);
    await expect(serverError).rejects.toMatchObject({
      retryable: true,
      message: 'SearXNG failed (HTTP 500); try again',
    });

    const unavailable = search({ query: 'q' }, { ...brave(), braveSearchApiUrl: `${simulator.url}/brave/_status/503` });
    await expect(unavailable).rejects.toMatchObject({ retryable: true, message: expect.stringContaining('HTTP 503') });

    const limited = search({ query: 'q' }, { ...tavily(), tavilyApiUrl: `${simulator.url}/tavily/_status/429` });
    await expect(limited).rejects.toMatchObject({ retryable: true, message: expect.stringContaining('HTTP 429') });
  });

  it('gives up on a slow engine at the tool’s timeout, retryably', async () => {
    const impatient = { ...webSearchTool, timeoutMs: 200 };
    const started = Date.now();
    const slow = search({ query: 'q' }, { searxngUrl: `${simulator.url}/searxng/_delay/5000` }, impatient);
    await expect(slow).rejects.toMatchObject({ name: 'ToolError', retryable: true });
    await expect(slow).rejects.toThrow('web_search did not finish within 0.2 s');
    expect(Date.now() - started).toBeLessThan(2_000);

    // A delay within the timeout is only a delay.
    const patient = await search({ query: 'q' }, { searxngUrl: `${simulator.url}/searxng/_delay/50` });
    expect(patient.ok).toBe(true);
  });

  it('refuses bad arguments before calling the engine', async () => {
    expect(await search({}, searxng())).toEqual({
      ok: false,
      content: expect.stringContaining('web_search: invalid arguments (query:'),
    });
    expect(await search({ query: '   ' }, searxng())).toEqual({
      ok: false,
      content: expect.stringContaining('invalid arguments (query:'),
    });
    expect(await search({ query: 'q', count: 11 }, searxng())).toEqual({
      ok: false,
      content: expect.stringContaining('invalid arguments (count:'),
    });
  });

  it('offers the model a schema with described parameters', () => {
    expect(toolJsonSchema(webSearchTool)).toMatchObject({
      type: 'object',
      properties: {
        query: { type: 'string', description: expect.any(String) },
        count: { type: 'integer', minimum: 1, maximum: 10, description: expect.any(String) },
      },
      required: ['query'],
    });
  });
});
