/**
 * Brave Search's Web Search API: `GET {BRAVE_SEARCH_API_URL}/res/v1/web/search?q=…&count=…` with the key in
 * `X-Subscription-Token` answers `{type: 'search', query, web: {results: [{title, url, description, …}]}, …}`;
 * titles and descriptions are HTML text (character references, `<strong>` highlights). A missing or invalid key is a 422 (not a 401) whose body is
 * `{type: 'ErrorResponse', error: {code: 'SUBSCRIPTION_TOKEN_INVALID' | 'VALIDATION', detail, status, meta}}`.
 */
import { z } from 'zod';
import { endpoint, plainText, requestJson, type SearchEngine } from './engine.ts';

const braveAnswer = z.object({
  web: z
    .object({
      results: z.array(
        z.object({ title: z.string().nullish(), url: z.string().nullish(), description: z.string().nullish() }),
      ),
    })
    .nullish(),
});

const braveError = z.object({
  error: z.object({ code: z.string().nullish(), detail: z.string().nullish() }),
});

/** Brave answers at most 20 results a page. */
const maxCount = 20;

export function braveEngine(baseUrl: string, apiKey: string): SearchEngine {
  return {
    id: 'brave',
    async search(query, count, signal) {
      const url = endpoint(baseUrl, '/res/v1/web/search');
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(Math.min(count, maxCount)));
      const answer = await requestJson({
        service: 'Brave Search',
        url,
        headers: { 'x-subscription-token': apiKey },
        signal,
        schema: braveAnswer,
        keyVariable: 'BRAVE_SEARCH_API_KEY',
        keyRefused: (status, body) => {
          if (status === 401 || status === 403) return true;
          const code = braveError.safeParse(body).data?.error.code;
          return code === 'SUBSCRIPTION_TOKEN_INVALID' || code === 'SUBSCRIPTION_TOKEN_MISSING';
        },
        errorDetail: (_, body) => braveError.safeParse(body).data?.error.detail ?? undefined,
      });
      return (answer.web?.results ?? [])
        .flatMap(({ title, url: link, description }) =>
          link ? [{ title: title ? plainText(title) : link, url: link, snippet: description ?? '' }] : [],
        )
        .slice(0, count);
    },
  };
}
