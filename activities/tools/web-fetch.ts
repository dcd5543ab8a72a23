/**
 * `web_fetch`: fetches a public web page and returns its readable text. Every fetch goes through the URL guard
 * (activities/net/url-guard.ts: public addresses only, also after redirects; 5 MiB, 5 redirects, a deadline; text
 * types only). HTML is parsed with linkedom, reduced to its article by @mozilla/readability (navigation, headers
 * and footers dropped) and written as Markdown by turndown; a page readability finds nothing in falls back to its
 * body text. Plain text, Markdown and JSON come back as they are.
 *
 * Links and images are made absolute against the page's URL before readability runs (linkedom has no base URL,
 * so readability would leave them relative), and only http(s) and mailto links are kept: a `javascript:` link
 * or a `data:` image is noise, or megabytes of base64, to a model. The content is cut so that the whole result,
 * as JSON, fits the output cap: the runtime's cut would otherwise break the JSON.
 */
import type { Readability } from '@mozilla/readability';
import type { parseHTML } from 'linkedom';
import type TurndownService from 'turndown';
import { z } from 'zod';
import { FetchGuardError, guardedFetch, type GuardedResponse } from '../net/url-guard.ts';
import { defineTool, ToolError } from './tool.ts';
import { loadOnce } from '../../process/load-once.ts';

const maxOutputChars = 20_000;
const htmlTypes = ['text/html', 'application/xhtml+xml'];
const acceptedTypes = [...htmlTypes, 'text/plain', 'text/markdown', 'application/json'];

export interface WebFetchResult {
  /** The URL that answered, after redirects. */
  url: string;
  title: string | null;
  /** Markdown for HTML pages, the text itself otherwise. */
  content: string;
}

/** What reading a page takes: the HTML parser, Readability and the Markdown converter. */
interface PageReaders {
  parseHTML: typeof parseHTML;
  Readability: typeof Readability;
  turndown: TurndownService;
}

/**
 * Imported at the process's first HTML page, not at its start: a process that never fetches a page does not carry
 * them (about 30 MiB; issue 29).
 */
const loadPageReaders = loadOnce(async (): Promise<PageReaders> => {
  const [linkedom, readability, turndownModule] = await Promise.all([
    import('linkedom'),
    import('@mozilla/readability'),
    import('turndown'),
  ]);
  return {
    parseHTML: linkedom.parseHTML,
    Readability: readability.Readability,
    turndown: new turndownModule.default({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' }),
  };
});

export const webFetchTool = defineTool({
  name: 'web_fetch',
  description:
    'Fetch a public web page (http or https) and return its main text as Markdown, with its title and the URL ' +
    'it ended at after redirects. Navigation, headers and footers are left out. Also reads plain text, Markdown ' +
    'and JSON. Binary files, pages over 5 MB and addresses outside the public internet are refused.',
  input: z.object({
    url: z.url().describe('The http or https URL of the page, e.g. "https://example.com/article".'),
    max_chars: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(`Most characters of content to return (at most about ${maxOutputChars.toLocaleString('en')}).`),
  }),
  // The guard's own deadline is shorter, so a slow page is reported as such rather than as a tool timeout.
  timeoutMs: 20_000,
  retry: { maximumAttempts: 2, initialIntervalMs: 500 },
  maxOutputChars,
  configured: () => true,
  async run(input, context) {
    let response: GuardedResponse;
    try {
      response = await guardedFetch(input.url, {
        maxBytes: 5 * 1024 * 1024,
        timeoutMs: 15_000,
        maxRedirects: 5,
        allowedContentTypes: acceptedTypes,
        allowedHosts: context.settings.fetchAllowedHosts,
        signal: context.signal,
        headers: {
          accept: 'text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,text/markdown;q=0.8,application/json;q=0.7',
          'user-agent': 'Mozilla/5.0 (compatible; Tessera web_fetch)',
        },
      });
    } catch (error) {
      if (!(error instanceof FetchGuardError)) throw error;
      throw new ToolError(error.message, { retryable: error.retryable, cause: error });
    }
    if (response.status < 200 || response.status >= 300) {
      throw new ToolError(`${response.url} answered with HTTP status ${response.status}`, {
        retryable: response.status >= 500,
      });
    }
    const result = htmlTypes.includes(response.contentType)
      ? readable(decode(response, true), response.url, await loadPageReaders())
      : { url: response.url, title: null, content: decode(response, false) };
    return fitted(result, input.max_chars ?? maxOutputChars);
  },
});

/** The body as text, in the charset the header names (or, for HTML, a `<meta>` in the first kilobyte), else UTF-8. */
function decode(response: GuardedResponse, html: boolean): string {
  const declared =
    response.charset ??
    (html
      ? /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(response.body.subarray(0, 1024).toString('latin1'))?.[1]
      : undefined);
  try {
    return new TextDecoder(declared ?? 'utf-8').decode(response.body);
  } catch {
    // An unknown charset label.
    return new TextDecoder('utf-8').decode(response.body);
  }
}

/** The page's article as Markdown, or its body text when readability finds none. */
function readable(html: string, url: string, readers: PageReaders): WebFetchResult {
  const { Readability, turndown } = readers;
  const document = parsePage(html, readers.parseHTML);
  absolutizeLinks(document, url);
  const pageTitle = document.title.trim() || null;
  let article: ReturnType<Readability['parse']> = null;
  try {
    article = new Readability(document).parse();
  } catch {
    // A page readability trips over is read as plain body text below.
  }
  const markdown = article?.content ? turndown.turndown(article.content).trim() : '';
  if (markdown !== '') return { url, title: article?.title?.trim() || pageTitle, content: markdown };
  // Readability changes the document it reads, so the fallback reads a fresh copy.
  const fresh = parsePage(html, readers.parseHTML);
  for (const element of fresh.querySelectorAll('script, style, noscript, template')) element.remove();
  const text = (fresh.body?.textContent ?? '')
    .replace(/[ \t\f\v\r]+/g, ' ')
    .replace(/ ?\n[\s]*/g, '\n')
    .trim();
  return { url, title: pageTitle, content: text };
}

type LinkedomDocument = ReturnType<typeof parseHTML>['document'];

/**
 * Parses a page. linkedom adds no implied `<html>`, `<head>` or `<body>`, so a page that leaves them out (HTML allows
 * it) would have an empty body: such a page is parsed again inside a body, its title and base moved to the head.
 */
function parsePage(html: string, parseHTML: PageReaders['parseHTML']): LinkedomDocument {
  const parsed = parseHTML(html).document;
  if (parsed.documentElement !== null && parsed.body.hasChildNodes()) return parsed;
  const { document } = parseHTML(`<!doctype html><html><head></head><body>${html}</body></html>`);
  for (const element of document.body.querySelectorAll('title, base')) document.head.append(element);
  for (const element of document.body.querySelectorAll('head, meta, link')) element.remove();
  return document;
}

function absolutizeLinks(document: LinkedomDocument, pageUrl: string): void {
  const base = resolved(document.querySelector('base[href]')?.getAttribute('href') ?? '', pageUrl) ?? pageUrl;
  for (const [selector, attribute, schemes] of [
    ['a[href]', 'href', ['http:', 'https:', 'mailto:']],
    ['img[src]', 'src', ['http:', 'https:']],
  ] as const) {
    for (const element of document.querySelectorAll(selector)) {
      const target = resolved(element.getAttribute(attribute) ?? '', base);
      if (target !== undefined && (schemes as readonly string[]).includes(new URL(target).protocol)) {
        element.setAttribute(attribute, target);
      } else if (selector === 'img[src]') {
        element.remove();
      } else {
        element.removeAttribute(attribute);
      }
    }
  }
}

function resolved(reference: string, base: string): string | undefined {
  try {
    return new URL(reference, base).href;
  } catch {
    return undefined;
  }
}

/** Cuts the content to `maxChars`, and further if need be so the result as JSON fits the tool's output cap. */
function fitted(result: WebFetchResult, maxChars: number): WebFetchResult {
  const full = result.content;
  for (let keep = Math.min(full.length, maxChars); ;) {
    const content =
      keep === full.length ? full : `${full.slice(0, keep)}\n… (cut: ${full.length - keep} more characters)`;
    const size = JSON.stringify({ ...result, content }).length;
    if (size <= maxOutputChars || keep === 0) return { ...result, content };
    keep = Math.max(0, keep - (size - maxOutputChars));
  }
}
