/**
 * SearXNG, the self-hostable metasearch engine, through its JSON API: `GET {SEARXNG_URL}/search?q=…&format=json`
 * answers `{query, number_of_results, results: [{title, url, content, engine, …}], answers, infoboxes, …}`. The
 * instance must allow the format (`search.formats` in its settings.yml lists `json`), or it answers 403. SearXNG has
 * no result-count parameter, so the first `count` results are kept.
 */
import { z } from 'zod';
import { endpoint, requestJson, type SearchEngine } from './engine.ts';

const searxngAnswer = z.object({
  results: z
    .array(z.object({ title: z.string().nullish(), url: z.string().nullish(), content: z.string().nullish() }))
    .nullish(),
});

export function searxngEngine(baseUrl: string): SearchEngine {
  return {
    id: 'searxng',
    async search(query, count, signal) {
      const url = endpoint(baseUrl, '/search');
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const answer = await requestJson({
        service: 'SearXNG',
        url,
        signal,
        schema: searxngAnswer,
        errorDetail: (status) =>
          status === 403 ? 'the instance must allow the json format (search.formats in settings.yml)' : undefined,
      });
      return (answer.results ?? [])
        .flatMap(({ title, url: link, content }) =>
          link ? [{ title: title ?? link, url: link, snippet: content ?? '' }] : [],
        )
        .slice(0, count);
    },
  };
}
