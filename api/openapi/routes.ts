/**
 * `GET /openapi.json` (the service's OpenAPI 3.1 document, api/openapi/document.ts) and `GET /docs` (its interactive
 * reference, rendered in the browser by Scalar's standalone bundle, served from node_modules at
 * `/docs/scalar.js`; no CDN). Public, like `/health`: a credential that is sent must still be valid (api/auth.ts).
 *
 * The page's Content-Security-Policy allows what Scalar needs and nothing more: scripts from this origin only (its
 * configuration is a file, `/docs/reference.js`, not an inline script), the inline styles and `data:` fonts and
 * images its bundle injects, and requests to this origin only (the document, and the "try it" client's calls).
 * Scalar's web fonts, telemetry and request proxy are switched off in that configuration; the CSP would block them.
 *
 * The guides (README.md and docs/*.md), which the document's introduction links, are served beside it at
 * `/docs/guides` (api/openapi/guides.ts).
 */
import Router from '@koa/router';
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { bytes, json, route, type RouteContract } from './contract.ts';
import { openApiDocument, type ServiceDescription } from './document.ts';
import { addGuideRoutes, guideContracts, guidesParagraph } from './guides.ts';

const require = createRequire(import.meta.url);
/** Scalar's standalone browser bundle (the package's `browser` entry; not in its `exports`, so found by path). */
const scalarBundle = join(
  dirname(dirname(require.resolve('@scalar/api-reference'))),
  'dist',
  'browser',
  'standalone.js',
);

export const docsContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function page(description: ServiceDescription): string {
  const title = `${description.title} — API reference`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
</head>
<body>
<noscript><p>${title}: the OpenAPI document is at <a href="/openapi.json">/openapi.json</a>.</p></noscript>
<div id="reference"></div>
<script src="/docs/scalar.js"></script>
<script src="/docs/reference.js"></script>
</body>
</html>
`;
}

/**
 * Scalar's configuration: this service's document, nothing fetched from elsewhere. The mount is not Scalar's
 * `#api-reference` with `data-url`, which its bundle would mount by itself with the default configuration (web fonts
 * from its CDN).
 */
const referenceScript = `Scalar.createApiReference('#reference', {
  url: '/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  hideClientButton: false,
  showDeveloperTools: 'never',
});
`;

export function openApiRoutes(description: ServiceDescription) {
  let document: ReturnType<typeof openApiDocument> | null = null;
  const router = new Router();
  router.get('/openapi.json', (context) => {
    // Built once, on first use: the contracts do not change while the process runs. The introduction ends with links
    // to the guides, served beside the document.
    document ??= openApiDocument({ ...description, description: `${description.description}\n\n${guidesParagraph()}` });
    context.body = document;
  });
  router.get('/docs', (context) => {
    context.set('Content-Security-Policy', docsContentSecurityPolicy);
    context.set('X-Content-Type-Options', 'nosniff');
    context.set('Referrer-Policy', 'no-referrer');
    context.type = 'html';
    context.body = page(description);
  });
  router.get('/docs/scalar.js', (context) => {
    context.type = 'text/javascript';
    context.set('Cache-Control', 'public, max-age=86400');
    context.set('X-Content-Type-Options', 'nosniff');
    context.body = createReadStream(scalarBundle);
  });
  router.get('/docs/reference.js', (context) => {
    context.type = 'text/javascript';
    context.set('X-Content-Type-Options', 'nosniff');
    context.body = referenceScript;
  });
  addGuideRoutes(router);
  return router;
}

const tags = ['Reference'];

/** The contracts of the routes above, for both services. */
export const openApiContracts: RouteContract[] = [
  route({
    method: 'GET',
    path: '/openapi.json',
    summary: 'This service’s OpenAPI 3.1 document',
    description: 'Generated from the zod schemas the routes validate with.',
    tags,
    access: 'public',
    responses: {
      200: json(
        z.looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({}), paths: z.looseObject({}) }),
        'The document',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/docs',
    summary: 'The interactive API reference (HTML)',
    tags,
    access: 'public',
    responses: { 200: bytes(['text/html'], 'The reference page, rendering /openapi.json') },
  }),
  route({
    method: 'GET',
    path: '/docs/scalar.js',
    summary: 'The reference page’s renderer (Scalar’s standalone bundle)',
    tags,
    access: 'public',
    responses: { 200: bytes(['text/javascript'], 'JavaScript') },
  }),
  route({
    method: 'GET',
    path: '/docs/reference.js',
    summary: 'The reference page’s configuration of the renderer',
    tags,
    access: 'public',
    responses: { 200: bytes(['text/javascript'], 'JavaScript') },
  }),
  ...guideContracts,
];
