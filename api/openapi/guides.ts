/**
 * The guides (the repository's README.md and docs/*.md) served read-only by both services, so that a reader of the
 * API reference (`/docs`, whose introduction links them: api/openapi/document.ts) reaches them from the service
 * itself, whichever way it was deployed:
 *
 * - `GET /docs/guides`: the index, docs/README.md;
 * - `GET /docs/guides/{name}`: docs/{name}.md, one of `guides` below; `readme` is the repository's README.md;
 * - `GET /docs/guides/web/{file}`: the web app's screenshots (docs/web/*.png) that the guides show.
 *
 * Only those files are served: a name is looked up in the fixed list (or, for a screenshot, among the PNG files the
 * folder held at the first request, names of `[a-z0-9-]` only), never joined into a path, so no request reaches any
 * other file. Each page is rendered by markdown-it with raw HTML off (HTML written in a guide shows as text) and its
 * default link check (no `javascript:`, `vbscript:`, `file:` or non-image `data:` URL becomes a link). A page has no
 * script: its Content-Security-Policy allows none, only its one stylesheet (by hash) and images from this origin.
 * Links between the guides are rewritten to their served paths; a relative link to anything not served (a folder, a
 * source file) shows as its text. Headings carry GitHub's anchors (`slug`), so `/docs/guides/gateway#embeddings` finds
 * what `docs/gateway.md#embeddings` finds on GitHub; test/docs/docs.test.ts holds every link of the guides to them.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import MarkdownIt, { type Env, type StateCore, type Token } from 'markdown-it';
import { createHash } from 'node:crypto';
import { createReadStream, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { bytes, route, type RouteContract } from './contract.ts';

/** The guides in docs/, in the order the index and the API reference list them. */
export const guides: ReadonlyArray<{ name: string; summary: string }> = [
  { name: 'gateway', summary: 'keys, endpoints, errors, models and routing, plans and credits, limits, embeddings' },
  { name: 'client-apis', summary: 'Anthropic’s Messages API, OpenAI’s Responses, Files and Batch APIs' },
  { name: 'capacity-queue', summary: 'the durable capacity queue: background jobs wait for capacity in a fair order' },
  { name: 'api-reference', summary: 'the OpenAPI documents and this reference' },
  { name: 'session-chat-and-tools', summary: 'the gateway’s session chat and the built-in tools' },
  { name: 'channels', summary: 'LINE and Telegram, and linking' },
  { name: 'agent-service', summary: 'logins, chat, loops and approvals, agents and memory, history, sharing' },
  { name: 'google-workspace', summary: 'the workspace agents on Google' },
  { name: 'scheduled-tasks', summary: 'agents on a cron' },
  { name: 'published-sites', summary: 'pages on subdomains' },
  { name: 'teams-and-a2a', summary: 'agent-to-agent (A2A) and teams' },
  { name: 'files-and-rag', summary: 'uploads, RAG, read-only SQL' },
  { name: 'webhooks', summary: 'inbound webhooks, GitHub, Slack, automation tools' },
  { name: 'web-app', summary: 'the web app' },
  { name: 'media', summary: 'speech, images, video, music, OCR, transcription' },
  { name: 'operations', summary: 'running and operating it' },
  { name: 'design-notes', summary: 'design decisions and why' },
  { name: 'libraries', summary: 'every library, and why' },
  { name: 'testing', summary: 'what the tests cover' },
  { name: 'benchmarks', summary: 'the figures, and where the time goes' },
];

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Served path → the file's path in the repository. */
const sources = new Map<string, string>([
  ['/docs/guides', 'docs/README.md'],
  ['/docs/guides/readme', 'README.md'],
  ...guides.map(({ name }) => [`/docs/guides/${name}`, `docs/${name}.md`] as [string, string]),
]);
/** The file's path in the repository → its served path. */
const servedPaths = new Map([...sources].map(([path, file]) => [file, path]));

const screenshotFolder = 'docs/web';
const screenshotName = /^[a-z0-9-]+\.png$/;
let screenshots: Set<string> | null = null;
function screenshotFiles(): Set<string> {
  if (!screenshots) {
    let names: string[] = [];
    try {
      names = readdirSync(`${root}${screenshotFolder}`);
    } catch {
      // A deployment without the screenshots: the pages show their alt text.
    }
    screenshots = new Set(names.filter((name) => screenshotName.test(name)));
  }
  return screenshots;
}

/** The paragraph the API reference's introduction ends with (api/openapi/document.ts). */
export function guidesParagraph(): string {
  const links = guides.map(({ name, summary }) => `[${name}.md](/docs/guides/${name}) (${summary})`);
  return (
    `**Guides**, served read-only by this service at [/docs/guides](/docs/guides): the [README](/docs/guides/readme), ` +
    `then ${links.join(', ')}.`
  );
}

/**
 * GitHub's anchor for a heading's text: lower-cased, every character that is not a letter, mark, number, `_`, `-` or
 * space removed, spaces turned into `-` (github-slugger's rule; a repeat gets `-1`, `-2`, … in `anchors`).
 */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** A heading's text as it reads (text and code spans, the text of links), what its anchor is made from. */
function inlineText(token: Token | undefined): string {
  return (token?.children ?? [])
    .map((child) => (child.type === 'text' || child.type === 'code_inline' ? child.content : ''))
    .join('');
}

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

/** Whether a link names a scheme (`https:`, `mailto:`) or another host (`//host`): not one of the repository's files. */
function external(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
}

/**
 * A relative link of the file at `from` (a repository path) as the repository path it names and its anchor, or null
 * for an anchor within the page (`#…`) and for links outside the repository.
 */
export function resolveLink(from: string, target: string): { file: string; anchor: string } | null {
  if (external(target) || target.startsWith('#')) return null;
  const hash = target.indexOf('#');
  const raw = hash === -1 ? target : target.slice(0, hash);
  let path = raw;
  try {
    path = decodeURI(raw);
  } catch {
    // A malformed escape: the path as written (it then names no file).
  }
  const anchor = hash === -1 ? '' : target.slice(hash + 1);
  return { file: posix.normalize(posix.join(posix.dirname(from), path)), anchor };
}

/** Where a link of a served page goes: the served path of a guide or screenshot, or null when it is not served. */
function servedLink(from: string, target: string): string | null {
  const resolved = resolveLink(from, target);
  if (!resolved) return target;
  const anchor = resolved.anchor ? `#${resolved.anchor}` : '';
  const guide = servedPaths.get(resolved.file);
  if (guide) return `${guide}${anchor}`;
  const folder = posix.dirname(resolved.file);
  const name = posix.basename(resolved.file);
  if (folder === screenshotFolder && screenshotFiles().has(name)) return `/docs/guides/web/${name}`;
  return null;
}

interface RenderEnvironment extends Env {
  /** The rendered file's path in the repository (links are relative to it); absent when only reading anchors. */
  source?: string;
  anchors: string[];
}

/** Headings get GitHub's anchors as ids; when rendering a page, links are pointed at their served paths. */
markdown.core.ruler.push('tessera_guides', (state: StateCore) => {
  const environment = state.env as unknown as RenderEnvironment;
  const counts = new Map<string, number>();
  state.tokens.forEach((token, index) => {
    if (token.type === 'heading_open') {
      const base = slug(inlineText(state.tokens[index + 1]));
      const seen = counts.get(base) ?? 0;
      counts.set(base, seen + 1);
      const anchor = seen === 0 ? base : `${base}-${seen}`;
      token.attrSet('id', anchor);
      environment.anchors.push(anchor);
    }
    if (token.type !== 'inline' || environment.source === undefined) return;
    // Links do not nest: a link not served shows its text, so its closing token goes with it.
    let dropping = false;
    for (const child of token.children ?? []) {
      if (child.type === 'link_open') {
        const href = servedLink(environment.source, String(child.attrGet('href') ?? ''));
        dropping = href === null;
        if (href !== null) child.attrSet('href', href);
        else {
          child.tag = 'span';
          child.attrs = null;
        }
      } else if (child.type === 'link_close' && dropping) {
        child.tag = 'span';
        dropping = false;
      } else if (child.type === 'image') {
        const src = servedLink(environment.source, String(child.attrGet('src') ?? ''));
        if (src !== null) child.attrSet('src', src);
        else {
          child.type = 'text';
          child.content = `[${child.content}]`;
        }
      }
    }
  });
  return true;
});

/** The anchors of a Markdown text's headings, as GitHub makes them (and as the served pages carry them). */
export function headingAnchors(text: string): string[] {
  const environment: RenderEnvironment = { anchors: [] };
  markdown.parse(text, environment);
  return environment.anchors;
}

/** Every link and image target of a Markdown text (not those in code), in order. */
export function linkTargets(text: string): string[] {
  const targets: string[] = [];
  for (const token of markdown.parse(text, { anchors: [] } satisfies RenderEnvironment)) {
    for (const child of token.children ?? []) {
      if (child.type === 'link_open') targets.push(String(child.attrGet('href') ?? ''));
      if (child.type === 'image') targets.push(String(child.attrGet('src') ?? ''));
    }
  }
  return targets;
}

const style = `body{margin:0;font:16px/1.55 system-ui,sans-serif;color:#1f2328;background:#fff}
nav{padding:.6rem 1.5rem;border-bottom:1px solid #d1d9e0;font-size:.9rem}
main{max-width:60rem;margin:0 auto;padding:1rem 1.5rem 4rem}
a{color:#0969da}
h1,h2,h3{line-height:1.25;margin-top:1.8em}
h1{font-size:2rem;border-bottom:1px solid #d1d9e0;padding-bottom:.3em}
h2{font-size:1.5rem;border-bottom:1px solid #d1d9e0;padding-bottom:.3em}
code{font:.875em ui-monospace,SFMono-Regular,Menlo,monospace;background:#eff1f3;padding:.15em .3em;border-radius:4px}
pre{background:#f6f8fa;padding:1rem;overflow:auto;border-radius:6px;line-height:1.4}
pre code{background:none;padding:0}
table{border-collapse:collapse;display:block;overflow:auto;margin:1rem 0}
th,td{border:1px solid #d1d9e0;padding:.35rem .7rem;vertical-align:top}
img{max-width:100%}
@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}a{color:#4493f8}
code{background:#262c36}pre{background:#161b22}nav,h1,h2,th,td{border-color:#3d444d}}
`;

export const guidesContentSecurityPolicy = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`,
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** A guide as an HTML page (its title from its first heading). */
export function renderGuide(source: string, text: string): string {
  const environment: RenderEnvironment = { source, anchors: [] };
  const tokens = markdown.parse(text, environment);
  const titleAt = tokens.findIndex((token) => token.type === 'heading_open');
  const title = titleAt === -1 ? source : inlineText(tokens[titleAt + 1]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} — Tessera guides</title>
<style>${style}</style>
</head>
<body>
<nav><a href="/docs/guides">Guides</a> · <a href="/docs/guides/readme">README</a> · <a href="/docs">API reference</a></nav>
<main>
${markdown.renderer.render(tokens, markdown.options, environment)}</main>
</body>
</html>
`;
}

/** Rendered once per process, on first use: the files do not change while it runs. */
const pages = new Map<string, string>();

async function page(path: string): Promise<string> {
  const cached = pages.get(path);
  if (cached) return cached;
  const source = sources.get(path);
  if (!source) throw new ApiError('not_found', 'No guide of that name (GET /docs/guides lists them)');
  let text: string;
  try {
    text = await readFile(`${root}${source}`, 'utf8');
  } catch {
    throw new ApiError('not_found', 'This deployment does not hold that guide');
  }
  const html = renderGuide(source, text);
  pages.set(path, html);
  return html;
}

/** Adds the guides' routes to the router of `/docs` (api/openapi/routes.ts). */
export function addGuideRoutes(router: Router): void {
  const answer = async (context: Context, path: string) => {
    const html = await page(path);
    context.set('Content-Security-Policy', guidesContentSecurityPolicy);
    context.set('X-Content-Type-Options', 'nosniff');
    context.set('Referrer-Policy', 'no-referrer');
    context.set('Cache-Control', 'public, max-age=300');
    context.type = 'html';
    context.body = html;
  };
  router.get('/docs/guides', (context) => answer(context, '/docs/guides'));
  router.get('/docs/guides/:name', (context) => answer(context, `/docs/guides/${context.params.name}`));
  router.get('/docs/guides/web/:file', (context) => {
    const file = context.params.file!;
    if (!screenshotFiles().has(file)) throw new ApiError('not_found', 'No screenshot of that name');
    context.set('X-Content-Type-Options', 'nosniff');
    context.set('Cache-Control', 'public, max-age=86400');
    context.type = 'image/png';
    context.body = createReadStream(`${root}${screenshotFolder}/${file}`);
  });
}

const tags = ['Reference'];
const html = bytes(['text/html'], 'The guide as an HTML page (no script)');

/** The contracts of the guides' routes, for both services. */
export const guideContracts: RouteContract[] = [
  route({
    method: 'GET',
    path: '/docs/guides',
    summary: 'The guides’ index (HTML)',
    description: 'docs/README.md of the Tessera repository, rendered: one line per guide, each linked.',
    tags,
    access: 'public',
    responses: { 200: html },
  }),
  route({
    method: 'GET',
    path: '/docs/guides/:name',
    summary: 'A guide (HTML)',
    description:
      'docs/{name}.md of the Tessera repository, rendered; `readme` is the repository’s README.md. The names: ' +
      `${guides.map(({ name }) => `\`${name}\``).join(', ')}.`,
    tags,
    access: 'public',
    request: { params: z.object({ name: z.string().meta({ description: 'The guide’s name, e.g. `gateway`' }) }) },
    responses: { 200: html },
    errors: { 404: 'No guide of that name' },
  }),
  route({
    method: 'GET',
    path: '/docs/guides/web/:file',
    summary: 'A screenshot of the web app that a guide shows',
    tags,
    access: 'public',
    request: { params: z.object({ file: z.string().meta({ description: 'e.g. `chat-1280.png`' }) }) },
    responses: { 200: bytes(['image/png'], 'The PNG') },
    errors: { 404: 'No screenshot of that name' },
  }),
];
