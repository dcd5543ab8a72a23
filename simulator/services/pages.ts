/**
 * Web pages for `web_fetch` and the URL guard, under `/pages/` (the simulator's host must be in the fetch's allowed
 * hosts: it listens on loopback, which the guard otherwise refuses). Every page is the same on every call:
 *
 * - `GET /pages/article`: an HTML article ("Durable Execution, Explained") with headings, paragraphs, a list and
 *   relative links, between a nav, a header and a footer that readability should drop (their texts carry the
 *   words `NAVIGATION`, `BANNER` and `FOOTER`, for tests to look for).
 * - `GET /pages/unreadable`: an HTML page whose only text is hidden, so readability finds no article.
 * - `GET /pages/plain`: `text/plain`.
 * - `GET /pages/redirect?to=<url>`: 302 to `to` (absolute, or relative to this page).
 * - `GET /pages/large?bytes=<n>`: `n` bytes of HTML streamed without a content length (reading stops when the
 *   client leaves).
 * - `GET /pages/binary`: `application/octet-stream`.
 * - `GET /pages/slow?ms=<n>`: a small HTML page after `n` milliseconds.
 * - `GET /pages/status?code=<n>`: an HTML error page with that status.
 */
import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import { pause } from '../transport.ts';
import type { SimulatedService } from './index.ts';

const articleParagraphs = [
  'Durable execution keeps the state of a long-running function in a history of events, so that a crash in the ' +
    'middle of the work does not lose what was already done. A worker that picks the function up again replays ' +
    'the history and continues from the last step that completed.',
  'The first consequence is that workflow code must be deterministic: given the same history, it must make the ' +
    'same decisions. Anything that talks to the outside world, such as a call to a model provider or a fetch of a ' +
    'web page, runs as an activity whose result is recorded.',
  'The second consequence is that retries become cheap and safe. An activity that failed is tried again under a ' +
    'policy, and the workflow only ever sees its final outcome; a café owner reading the trace sees one line per ' +
    'attempt, not a tangle of logs.',
  'Timers are part of the history as well. A workflow may wait for a day or a month for an approval, and the wait ' +
    'survives deployments and restarts because nothing is held in memory while it lasts.',
];

const articleHtml = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Durable Execution, Explained</title>
</head>
<body>
  <nav class="site-nav"><a href="/">NAVIGATION Home</a> <a href="/pages/about">NAVIGATION About</a>
    <a href="/pages/contact">NAVIGATION Contact</a></nav>
  <header class="site-header"><div>BANNER: The Simulated Engineering Blog</div></header>
  <main>
    <article>
      <h1>Durable Execution, Explained</h1>
      <h2>State in a history</h2>
      <p>${articleParagraphs[0]}</p>
      <p>${articleParagraphs[1]} See <a href="/pages/determinism">the notes on determinism</a>.</p>
      <h2>Retries and timers</h2>
      <p>${articleParagraphs[2]}</p>
      <ul><li>Activities are retried under a policy.</li><li>Timers survive restarts.</li></ul>
      <p>${articleParagraphs[3]}</p>
    </article>
  </main>
  <footer class="site-footer"><p>FOOTER: © Simulated Blog. <a href="/pages/privacy">Privacy</a></p></footer>
</body>
</html>
`;

const unreadableHtml = `<!doctype html>
<html><head><title>Loading</title></head>
<body><div style="display:none">Only hidden text: the page fills itself in with a script.</div></body></html>
`;

const plainText = 'Plain text page.\nLine two of the plain text page.\n';

export const pagesService: SimulatedService = {
  prefix: '/pages/',
  async handle(_request, response, url) {
    // Aborted when the client goes away, so no slow or large page keeps going for a reader that left.
    const clientGone = new AbortController();
    response.once('close', () => clientGone.abort());
    response.on('error', () => {
      // Writes racing a client disconnect fail; the close handler already stopped the page.
    });
    const page = url.pathname.slice('/pages/'.length);
    const number = (name: string) => Number(url.searchParams.get(name) ?? Number.NaN);
    if (page === 'article') return send(response, 200, 'text/html; charset=utf-8', articleHtml);
    if (page === 'unreadable') return send(response, 200, 'text/html; charset=utf-8', unreadableHtml);
    if (page === 'plain') return send(response, 200, 'text/plain; charset=utf-8', plainText);
    if (page === 'binary') return send(response, 200, 'application/octet-stream', Buffer.from([0, 1, 2, 254, 255]));
    if (page === 'redirect') {
      const to = url.searchParams.get('to');
      if (to === null) return send(response, 400, 'text/plain', 'missing ?to=');
      response.writeHead(302, { location: to, 'content-length': 0 });
      response.end();
      return;
    }
    if (page === 'large' && Number.isInteger(number('bytes'))) {
      return sendLarge(response, number('bytes'), clientGone.signal);
    }
    if (page === 'slow' && Number.isInteger(number('ms'))) {
      if (!(await pause(number('ms'), clientGone.signal))) return;
      return send(response, 200, 'text/html; charset=utf-8', htmlPage('Slow page', 'This page took its time.'));
    }
    const code = number('code');
    if (page === 'status' && Number.isInteger(code) && code >= 200 && code <= 599) {
      return send(response, code, 'text/html; charset=utf-8', htmlPage(`Status ${code}`, `The page answered ${code}.`));
    }
    send(response, 404, 'text/html; charset=utf-8', htmlPage('Not found', `No page at ${url.pathname}.`));
  },
};

function htmlPage(title: string, text: string): string {
  return `<!doctype html><html><head><title>${title}</title></head><body><p>${text}</p></body></html>`;
}

function send(response: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

async function sendLarge(response: ServerResponse, bytes: number, signal: AbortSignal): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  const chunk = Buffer.alloc(64 * 1024, '<p>Filler paragraph of the large page.</p>\n');
  for (let left = bytes; left > 0 && !signal.aborted; left -= chunk.length) {
    if (response.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) continue;
    try {
      await once(response, 'drain', { signal });
    } catch {
      return;
    }
  }
  response.end();
}
