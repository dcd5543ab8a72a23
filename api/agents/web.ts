/**
 * The web app (web/, docs/web-app.md) as the agent service serves it, from its build output (`web/dist`, made by
 * scripts/build-web.ts):
 *
 * - `GET|HEAD /assets/<name>-<hash>.<ext>`: the bundles, styles and fonts, whose names change with their content, so
 *   `Cache-Control: public, max-age=31536000, immutable`; brotli or gzip (made at build time) when the browser takes
 *   it.
 * - `GET|HEAD` of one of the app's pages (web/routes.ts) from a client that accepts HTML: `index.html`, `no-cache`
 *   (always revalidated, so a new build is picked up at once), under a strict Content-Security-Policy: scripts,
 *   styles and connections of this origin only, no inline script or style, no framing.
 *
 * Anything else goes on to the API. The output is read once and kept in memory (some hundred kilobytes); while it is
 * missing (`npm run api` before a build) the pages answer 503 saying how to build it, and each request looks again.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';
import { isPagePath } from '../../web/routes.ts';

export const defaultWebDist = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/** The CSP of the app's HTML. `img-src` takes data: and blob: for previews of images about to be attached. */
export const webContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const contentTypes: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

interface WebFile {
  body: Buffer;
  br: Buffer | null;
  gzip: Buffer | null;
  type: string;
  etag: string;
}

interface LoadedBuild {
  index: WebFile;
  assets: Map<string, WebFile>;
}

function readFile(path: string): WebFile {
  const body = readFileSync(path);
  const compressed = (suffix: string) => (existsSync(path + suffix) ? readFileSync(path + suffix) : null);
  return {
    body,
    br: compressed('.br'),
    gzip: compressed('.gz'),
    type: contentTypes[extname(path)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

function loadBuild(distDir: string): LoadedBuild | null {
  const indexPath = join(distDir, 'index.html');
  if (!existsSync(indexPath)) return null;
  const assets = new Map<string, WebFile>();
  const assetsDir = join(distDir, 'assets');
  if (existsSync(assetsDir)) {
    for (const name of readdirSync(assetsDir)) {
      if (name.endsWith('.br') || name.endsWith('.gz')) continue;
      if (!statSync(join(assetsDir, name)).isFile()) continue;
      assets.set(name, readFile(join(assetsDir, name)));
    }
  }
  return { index: readFile(indexPath), assets };
}

export function webApp(options: { distDir?: string } = {}): Middleware {
  const distDir = options.distDir ?? defaultWebDist;
  let build: LoadedBuild | null = null;
  const current = () => (build ??= loadBuild(distDir));

  return async (context, next) => {
    if (context.method !== 'GET' && context.method !== 'HEAD') return next();
    if (context.path.startsWith('/assets/')) {
      const name = context.path.slice('/assets/'.length);
      const file = current()?.assets.get(name);
      if (!file) return next();
      context.set('Cache-Control', 'public, max-age=31536000, immutable');
      send(context, file);
      return;
    }
    if (!isPagePath(context.path) || !context.accepts('html')) return next();
    const loaded = current();
    context.set('Cache-Control', 'no-cache');
    if (!loaded) {
      context.status = 503;
      context.type = 'text/plain; charset=utf-8';
      context.body = 'The web app is not built: run `npm run build:web` (npm start builds it by itself).\n';
      return;
    }
    context.set('Content-Security-Policy', webContentSecurityPolicy);
    context.set('X-Frame-Options', 'DENY');
    context.set('Referrer-Policy', 'same-origin');
    context.set('Cross-Origin-Opener-Policy', 'same-origin');
    send(context, loaded.index);
  };
}

/** The file, compressed as the client accepts it (brotli first), revalidated by ETag. */
function send(context: Parameters<Middleware>[0], file: WebFile): void {
  context.set('X-Content-Type-Options', 'nosniff');
  context.vary('Accept-Encoding');
  context.type = file.type;
  context.etag = file.etag;
  // Koa judges freshness only for a 2xx answer.
  context.status = 200;
  if (context.fresh) {
    context.status = 304;
    return;
  }
  const encoding = context.acceptsEncodings('br', 'gzip', 'identity');
  if (encoding === 'br' && file.br) {
    context.set('Content-Encoding', 'br');
    context.body = file.br;
  } else if (encoding === 'gzip' && file.gzip) {
    context.set('Content-Encoding', 'gzip');
    context.body = file.gzip;
  } else {
    context.body = file.body;
  }
}
