/**
 * Tavily's Search API: `POST {TAVILY_API_URL}/search` with `Authorization: Bearer <key>` and the JSON body
 * `{query, max_results}` answers `{query, answer, images, results: [{title, url, content, score, …}],
 * response_time}`. A missing or invalid key is a 401 with `{detail: {error: 'Unauthorized: missing or invalid API
 * key.'}}`; other refusals carry the same body.
 */
import { z } from 'zod';
import { endpoint, requestJson, type SearchEngine } from './engine.ts';

const tavilyAnswer = z.object({
  results: z.array(z.object({ title: z.string().nullish(), url: z.string().nullish(), content: z.string().nullish() })),
});

const tavilyError = z.object({ detail: z.object({ error: z.string() }) });

export function tavilyEngine(baseUrl: string, apiKey: string): SearchEngine {
  return {
    id: 'tavily',
    async search(query, count, signal) {
      const answer = await requestJson({
        service: 'Tavily',
        url: endpoint(baseUrl, '/search'),
        body: { query, max_results: count },
        headers: { authorization: `Bearer ${apiKey}` },
        signal,
        schema: tavilyAnswer,
        keyVariable: 'TAVILY_API_KEY',
        errorDetail: (_, body) => tavilyError.safeParse(body).data?.detail.error,
      });
      return answer.results
        .flatMap(({ title, url: link, content }) =>
          link ? [{ title: title ?? link, url: link, snippet: content ?? '' }] : [],
        )
        .slice(0, count);
    },
  };
}
