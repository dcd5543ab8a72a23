/**
 * The search engines `web_search` calls, each under its own prefix so a test points the tool's settings at it:
 *
 * - SearXNG (`searxngUrl: ${sim}/searxng`): `GET /searxng/search?q=…&format=json` →
 *   `{query, number_of_results, results: [{title, url, content, engine, …}], answers, infoboxes, …}`; another format
 *   is a 403, as on an instance that does not allow it.
 * - Brave Search (`braveSearchApiUrl: ${sim}/brave`): `GET /brave/res/v1/web/search?q=…&count=…` with
 *   `X-Subscription-Token: sim-brave-key` → `{type: 'search', query: {original}, web: {results: [{title, url,
 *   description}]}}` in HTML text, descriptions with `<strong>` highlights; a missing or other token is Brave's 422.
 * - Tavily (`tavilyApiUrl: ${sim}/tavily`): `POST /tavily/search` `{query, max_results}` with
 *   `Authorization: Bearer tvly-sim-key` → `{query, answer, images, results: [{title, url, content, score}],
 *   response_time}`; another key is Tavily's 401.
 *
 * Results are a function of the query alone. Faults ride in the configured URL: a `/_status/<code>` segment answers
 * with that status in the engine's error shape, `/_delay/<ms>` waits first (e.g. `${sim}/searxng/_status/503`).
 */
import type { ServerResponse } from 'node:http';
import { pause, readJsonObject, sendJson } from '../transport.ts';
import type { SimulatedService } from './index.ts';

/** The keys the simulated hosted engines accept. */
export const simulatedSearchKeys = { brave: 'sim-brave-key', tavily: 'tvly-sim-key' } as const;

/** SearXNG answers one page of results; the simulated page has ten. */
const searxngPageSize = 10;
const maxBodyBytes = 64 * 1024;

export interface PathFault {
  /** The path without its fault segments. */
  path: string;
  status?: number;
  delayMs?: number;
}

/** Takes the `/_status/<code>` and `/_delay/<ms>` segments out of a simulated service's path. */
export function takePathFault(pathname: string): PathFault {
  const fault: PathFault = { path: pathname };
  fault.path = pathname.replace(/\/_(status|delay)\/(\d+)(?=\/|$)/g, (_, kind: string, value: string) => {
    if (kind === 'status') fault.status = Number(value);
    else fault.delayMs = Number(value);
    return '';
  });
  return fault;
}

/** Waits out a delay fault; false when the client left meanwhile (nothing more to send). */
export async function waitOutDelay(fault: PathFault, response: ServerResponse): Promise<boolean> {
  if (fault.delayMs === undefined) return true;
  const clientGone = new AbortController();
  response.once('close', () => clientGone.abort());
  return pause(fault.delayMs, clientGone.signal);
}

export const searxngService: SimulatedService = {
  prefix: '/searxng/',
  async handle(request, response, url) {
    const fault = takePathFault(url.pathname);
    if (!(await waitOutDelay(fault, response))) return;
    if (fault.status !== undefined) return sendText(response, fault.status, `Simulated fault ${fault.status}`);
    if (request.method !== 'GET' || fault.path !== '/searxng/search') return sendText(response, 404, 'Not Found');
    const format = url.searchParams.get('format');
    if (format !== null && format !== 'json') return sendText(response, 403, 'Forbidden');
    const query = url.searchParams.get('q') ?? '';
    if (format === null) return sendText(response, 200, `<html><body>Results for ${escapeHtml(query)}</body></html>`);
    const results = simulatedResults(query, query.trim() === '' ? 0 : searxngPageSize).map((result, index) => ({
      url: result.url,
      title: result.title,
      content: result.text,
      engine: 'simulated',
      engines: ['simulated'],
      positions: [index + 1],
      score: 1 / (index + 1),
      category: 'general',
      template: 'default.html',
    }));
    sendJson(response, 200, {
      query,
      number_of_results: results.length,
      results,
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    });
  },
};

export const braveService: SimulatedService = {
  prefix: '/brave/',
  async handle(request, response, url) {
    const fault = takePathFault(url.pathname);
    if (!(await waitOutDelay(fault, response))) return;
    if (fault.status !== undefined) {
      return sendBraveError(response, fault.status, 'SIMULATED_FAULT', `Simulated fault ${fault.status}.`);
    }
    if (request.method !== 'GET' || fault.path !== '/brave/res/v1/web/search') {
      return sendBraveError(response, 404, 'RESOURCE_NOT_FOUND', 'Resource not found.');
    }
    const token = request.headers['x-subscription-token'];
    if (token === undefined) {
      return sendBraveError(response, 422, 'VALIDATION', 'Unable to validate request parameter(s).');
    }
    if (token !== simulatedSearchKeys.brave) {
      return sendBraveError(response, 422, 'SUBSCRIPTION_TOKEN_INVALID', 'The provided subscription token is invalid.');
    }
    const query = url.searchParams.get('q') ?? '';
    const count = Number(url.searchParams.get('count') ?? '20');
    if (query.trim() === '' || !Number.isInteger(count) || count < 1 || count > 20) {
      return sendBraveError(response, 422, 'VALIDATION', 'Unable to validate request parameter(s).');
    }
    sendJson(response, 200, {
      type: 'search',
      query: { original: query },
      web: {
        type: 'search',
        results: simulatedResults(query, count).map((result, index) => ({
          type: 'search_result',
          title: escapeHtml(result.title),
          url: result.url,
          description: `Simulated page ${index + 1} about <strong>${escapeHtml(query)}</strong> &amp; more.`,
        })),
      },
    });
  },
};

export const tavilyService: SimulatedService = {
  prefix: '/tavily/',
  async handle(request, response, url) {
    const fault = takePathFault(url.pathname);
    if (!(await waitOutDelay(fault, response))) return;
    if (fault.status !== undefined) return sendTavilyError(response, fault.status, `Simulated fault ${fault.status}.`);
    if (request.method !== 'POST' || fault.path !== '/tavily/search')
      return sendTavilyError(response, 404, 'Not Found');
    if (request.headers.authorization !== `Bearer ${simulatedSearchKeys.tavily}`) {
      return sendTavilyError(response, 401, 'Unauthorized: missing or invalid API key.');
    }
    const body = await readJsonObject(request, maxBodyBytes);
    const query = typeof body?.query === 'string' ? body.query : '';
    const maxResults = body?.max_results ?? 5;
    if (query.trim() === '' || typeof maxResults !== 'number' || maxResults < 0 || maxResults > 20) {
      return sendTavilyError(response, 400, 'Invalid request: query and max_results (0 to 20) are checked.');
    }
    sendJson(response, 200, {
      query,
      follow_up_questions: null,
      answer: null,
      images: [],
      results: simulatedResults(query, maxResults).map((result, index) => ({
        title: result.title,
        url: result.url,
        content: result.text,
        score: Math.round((0.9 - index * 0.05) * 100) / 100,
        raw_content: null,
      })),
      response_time: 0.01,
    });
  },
};

/** The same results for the same query: the query's words make the URLs. */
function simulatedResults(query: string, count: number): Array<{ title: string; url: string; text: string }> {
  const slug =
    query
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'query';
  return Array.from({ length: count }, (_, index) => ({
    title: `${query} - simulated result ${index + 1}`,
    url: `https://example.com/${slug}/${index + 1}`,
    text: `Simulated page ${index + 1} about ${query}.`,
  }));
}

function sendBraveError(response: ServerResponse, status: number, code: string, detail: string): void {
  sendJson(response, status, {
    type: 'ErrorResponse',
    error: { id: 'simulated', status, code, detail, meta: { component: 'simulator' } },
    time: 0,
  });
}

function sendTavilyError(response: ServerResponse, status: number, error: string): void {
  sendJson(response, status, { detail: { error } });
}

function sendText(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
