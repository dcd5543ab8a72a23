/**
 * `web_search`: the top results (title, URL, plain-text snippet) for a query, from the engine the deployment
 * configured: a self-hosted SearXNG when `SEARXNG_URL` is set, else Brave Search (`BRAVE_SEARCH_API_KEY`), else
 * Tavily (`TAVILY_API_KEY`). With none of them the tool is not configured and the model is not offered it. The
 * engines' wire protocols are in search/.
 */
import { z } from 'zod';
import { braveEngine } from './search/brave.ts';
import { plainText, type SearchEngine } from './search/engine.ts';
import { searxngEngine } from './search/searxng.ts';
import { tavilyEngine } from './search/tavily.ts';
import { defineTool, ToolError } from './tool.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';

const defaultCount = 5;

/** The engine the settings choose, or undefined when none is configured. */
export function searchEngineFor(settings: ToolSettings): SearchEngine | undefined {
  const searxngUrl = present(settings.searxngUrl);
  if (searxngUrl !== undefined) return searxngEngine(searxngUrl);
  const braveKey = present(settings.braveSearchApiKey);
  if (braveKey !== undefined) return braveEngine(settings.braveSearchApiUrl, braveKey);
  const tavilyKey = present(settings.tavilyApiKey);
  if (tavilyKey !== undefined) return tavilyEngine(settings.tavilyApiUrl, tavilyKey);
  return undefined;
}

export const webSearchTool = defineTool({
  name: 'web_search',
  description:
    'Searches the web and returns the top results, each with its title, URL and a short snippet. Use it for ' +
    'current events and facts you are not sure of; the snippets are short, so read a page for its details.',
  input: z.object({
    query: z.string().trim().min(1).max(400).describe('What to search for, as you would type it into a search engine'),
    count: z
      .number()
      .int()
      .min(1)
      .max(10)
      .optional()
      .describe(`How many results to return (1 to 10, default ${defaultCount})`),
  }),
  timeoutMs: 15_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 1_000 },
  maxOutputChars: 8_000,
  configured: (settings) => searchEngineFor(settings) !== undefined,
  async run({ query, count = defaultCount }, { settings, signal }) {
    const engine = searchEngineFor(settings);
    if (engine === undefined) throw new ToolError('no search engine is configured');
    const results = await engine.search(query, count, signal);
    return {
      query,
      engine: engine.id,
      results: results.map(({ title, url, snippet }) => ({ title, url, snippet: plainText(snippet) })),
    };
  },
});

function present(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
